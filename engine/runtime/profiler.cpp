#include "runtime/profiler.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/calibrate/send_cost.h"
#include "core/events/event_json.h"
#include "core/spec/optimizer_state.h"
#include "core/model/analytic_profile.h"
#include "runtime/device_memory.h"
#include "runtime/device_placement.h"
#include "runtime/event_clock.h"
#include "runtime/host_allocator.h"
#include "runtime/layers.h"
#include "runtime/memory.h"
#include "runtime/transport_agreement.h"
#include "runtime/messenger.h"
#include "runtime/process_group.h"
#include "runtime/split_backward.h"
#include "runtime/model_family.h"

namespace pw::rt {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

c10::Device profile_device(const std::string& requested) {
  if (requested == "cpu") return c10::Device(c10::kCPU);
  if (requested != "cuda" && requested != "auto" && !requested.empty())
    throw std::invalid_argument("profile device '" + requested + "': one of auto, cpu, cuda");
  // Where stage 0 of a run started on this host computes: the workers' own
  // placement rule (core/cluster/transport_choice.h), not a second one.
  const c10::Device stage = StageDevice::from(local_transport("gloo", 1), 0).device;
  if (requested == "cuda" && stage.is_cpu())
    throw std::invalid_argument("profile device cuda: libtorch sees no CUDA device here");
  return stage;
}

ModelProfile measure_profile(const JobSpec& job, const ProfileOptions& options) {
  int threads = options.threads > 0
                    ? options.threads
                    : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / job.pipeline.stages);
  at::set_num_threads(threads);
  tune_host_allocator();
  TensorBytes::install();
  auto layers = build_layers(job);
  auto shapes = layer_boundary_shapes(layers, model_input_shape(job), model_takes_tokens(job));
  // Where a stage of the job would compute on this machine, timed by that
  // device's clock (on a GPU the host clock would time kernel launches)
  // and metered by its allocator.
  const c10::Device device = profile_device(options.device);
  for (auto& layer : layers)
    if (!device.is_cpu()) layer->to(device);
  DeviceMemory& memory = device_memory(device);
  const std::unique_ptr<EventClock> clock = make_event_clock(device);
  const auto on = at::TensorOptions().device(device);
  const int reps = std::max(1, options.repeats);
  const auto& opt = job.training.optimizer;
  // Same layer names as the analytic profile (and the same count).
  const auto names = model_family(job).profile_layers(job);
  if (names.size() != layers.size())
    throw std::logic_error("engine layers do not match the analytic profile's");

  ModelProfile p;
  p.microbatch_size = job.training.microbatch_size;
  p.device = job.cluster.device.preset;
  p.source = "measured";
  p.assumptions.push_back("measured on " + device.str() + " (" + memory.source() + ")");
  for (size_t l = 0; l < layers.size(); ++l) {
    auto& layer = layers[l];
    LayerProfile lp;
    lp.name = names[l].name;
    lp.type = names[l].type;
    std::vector<at::Tensor> params = layer->parameters();
    std::unique_ptr<torch::optim::Optimizer> o;
    if (opt == "adam")
      o = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(1e-9));
    else
      o = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(1e-9).momentum(opt == "momentum" ? 0.9 : 0));
    auto x = l == 0 && model_takes_tokens(job) ? at::randint(job.model.vocab, shapes[l], on.dtype(at::kLong))
                                               : at::randn(shapes[l], on);
    if (l > 0) x.requires_grad_(true);
    // The last stage also computes the loss and its gradient in its
    // forward (stage.cpp): time that work with the layer, on labels of the
    // output's shape.
    const bool last = l + 1 == layers.size();
    at::Tensor target;
    if (last) {
      auto out = shapes[l + 1];
      std::int64_t classes = out.back();
      out.pop_back();
      target = at::randint(classes, out, on.dtype(at::kLong));
    }
    std::vector<double> f, b, s, w;
    std::int64_t held = 0, peak = 0;
    for (int r = 0; r < reps + 2; ++r) {
      std::int64_t before = memory.live();
      memory.reset_peak();
      const auto t0 = clock->mark();
      auto y = layer->forward(x);
      held = memory.live() - before;
      at::Tensor g;
      if (last) {
        auto logits = y.detach().requires_grad_(true);
        pipeline_loss(logits, target).backward();
        g = logits.grad();
      }
      const auto t1 = clock->mark();
      if (!last) g = at::ones_like(y);
      const auto t2 = clock->mark();
      torch::autograd::backward({y}, {g});
      const auto t3 = clock->mark();
      // Everything the forward and backward had live at once, over what the
      // forward keeps: the output gradient and the backward's buffers.
      peak = std::max(peak, memory.peak() - before - held);
      const auto t4 = clock->mark();
      o->step();
      const auto t5 = clock->mark();
      o->zero_grad();
      if (x.grad().defined()) x.grad().zero_();
      // W apart, as zero-bubble schedules run it: B, then the weight
      // gradients alone (B's share of the backward is bwd_ms minus this).
      EventClock::Mark t6 = 0, t7 = 0;
      {
        at::Tensor in = l > 0 ? x.detach().requires_grad_(true) : x;
        auto y2 = layer->forward(in);
        SplitBackward split;
        split.input_gradient(torch::autograd::impl::gradient_edge(y2), g, l > 0 ? in : at::Tensor(), params);
        t6 = clock->mark();
        split.weight_gradient();
        t7 = clock->mark();
        o->zero_grad();
      }
      clock->resolve();
      auto ms = [&](EventClock::Mark a, EventClock::Mark b) { return static_cast<double>(clock->host_ns(b) - clock->host_ns(a)) / 1e6; };
      const double fm = ms(t0, t1), bm = ms(t2, t3), sm = ms(t4, t5), wm = ms(t6, t7);
      if (r >= 2) {
        f.push_back(fm);
        b.push_back(bm);
        s.push_back(sm);
        w.push_back(wm);
      }
    }
    std::int64_t pb = 0;
    for (auto& t : params) pb += t.nbytes();
    lp.fwd_ms = median(f);
    lp.bwd_ms = median(b);
    lp.bwd_weight_ms = std::min(median(w), lp.bwd_ms);
    lp.optimizer_ms = median(s);
    lp.input_bytes = x.nbytes();
    lp.output_bytes = at::empty(shapes[l + 1]).nbytes();  // float, as the wire carries it
    lp.activation_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, held)) + lp.input_bytes;
    lp.workspace_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, peak));
    lp.param_bytes = pb;
    lp.param_tensors = static_cast<int>(params.size());
    lp.optimizer_bytes = optimizer_states_per_param(opt) * pb;
    p.layers.push_back(lp);
  }
  return p;
}

LinkProfile measure_local_link(std::int64_t bytes, int repeats) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>> pgs(2);
  auto make = [&](int rank) {
    pgs[rank] = make_gloo_group(store, rank, 2, {.timeout = std::chrono::seconds(60), .threads = 2});
  };
  std::thread other(make, 1);
  make(0);
  other.join();
  // Ordered: the ping-pong below posts in the same order on both ends, so
  // it runs unchanged where tags are ignored (NCCL).
  Messenger m0(pgs[0], MessagingMode::Ordered), m1(pgs[1], MessagingMode::Ordered);
  // Median one-way time of n float32 elements (rank 1 echoes what it gets),
  // and the median time the send call itself holds the sending thread.
  struct Timing {
    double one_way_ms, send_call_ms;
  };
  auto time_messages = [&](std::int64_t n) {
    std::thread echo([&] {
      std::vector<at::Tensor> buf{at::empty({n})};
      for (int r = 0; r < repeats + 2; ++r) {
        m1.recv(buf, 0, r)->wait();
        m1.send(buf, 0, r)->wait();
      }
    });
    std::vector<at::Tensor> buf{at::zeros({n})};
    std::vector<double> t, call;
    for (int r = 0; r < repeats + 2; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      auto work = m0.send(buf, 1, r);
      double c = ms_since(t0);
      work->wait();
      m0.recv(buf, 1, r)->wait();
      if (r >= 2) t.push_back(ms_since(t0) / 2), call.push_back(c);
    }
    echo.join();
    return Timing{median(t), median(call)};
  };
  std::int64_t n = std::max<std::int64_t>(1, bytes / 4);
  Timing small = time_messages(1), large = time_messages(n);
  const double bits = n * 4 * 8.0;
  LinkProfile link;
  link.latency_us = small.one_way_ms * 1e3;
  link.gbps = bits / (std::max(large.one_way_ms - small.one_way_ms, 1e-6) * 1e-3) / 1e9;
  link.send_cpu_us = small.send_call_ms * 1e3;
  double per_byte_ms = large.send_call_ms - small.send_call_ms;
  link.send_cpu_gbps = per_byte_ms > 1e-6 ? bits / (per_byte_ms * 1e-3) / 1e9 : 0;
  return link;
}

LinkProfile calibrate_sends(const std::string& run_dir, LinkProfile link) {
  if (auto fit = fit_send_cost(read_event_files(run_dir))) {
    link.send_cpu_us = fit->per_message_us;
    link.send_cpu_gbps = fit->gbps;
  }
  return link;
}

}  // namespace pw::rt

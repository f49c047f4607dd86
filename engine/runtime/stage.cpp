#include "runtime/stage.h"

#include <sstream>

#include "runtime/checked_write.h"

#include "core/events/clock.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "core/spec/learning_rate.h"
#include "runtime/activation_swap.h"
#include "runtime/data.h"
#include "runtime/layers.h"
#include "runtime/send_reaper.h"
#include "runtime/split_backward.h"

namespace pw::rt {
namespace {


enum Dir : int { kActivation = 0, kGradient = 1 };

// What a layer keeps between its forward and backward for one microbatch.
struct LayerState {
  at::Tensor in;   // the layer's input (a leaf when gradients flow upstream)
  at::Tensor out;  // Keep: the output with its autograd graph
  // Swap: the graph's root without its output tensor (which the next layer
  // holds as its input, or a send), and the saved tensors, off the device.
  torch::autograd::Edge root;
  std::unique_ptr<SwappedActivations> swap;
  // Split backward: what B keeps for W (the graph stays with `out`/`root`).
  SplitBackward split;
};

// Weight stashing (PipeDream): the weight version a microbatch's forward
// used, kept for its backward while the live weights move on.
struct Stash {
  std::vector<torch::nn::Sequential> layers;  // indexed from the virtual stage's first layer
  std::int64_t bytes = 0;
};

struct MicrobatchState {
  std::vector<LayerState> layers;  // indexed from the virtual stage's first layer
  at::Tensor out_grad;             // last virtual stage: dLoss/dOutput
  std::shared_ptr<Stash> stash;    // async schedules on stages with > 1 weight version
  bool input_gradient_done = false;  // split backward: B ran, W pending
};

struct Comm {
  std::vector<at::Tensor> buf;
  c10::intrusive_ptr<c10d::Work> work;
};

}  // namespace

struct StageExecutor::Impl {
  JobSpec job;
  Plan plan;
  const Schedule* sched;  // the job's schedule, or the async program being run
  std::unique_ptr<Schedule> program;
  int device, devices, vstages, microbatches;
  PG pg;
  TrainData& data;
  EventSink* sink;
  std::vector<torch::nn::Sequential> layers;  // all model layers; only ours are non-null
  std::vector<std::vector<int64_t>> shapes;   // layer input shapes (+ model output)
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> buffers;  // batch-norm running statistics and the like: trained state too
  StageMemory memory;
  std::map<std::pair<int, int>, MicrobatchState> state;  // (microbatch, chunk)
  std::map<std::tuple<int, int, int>, Comm> recvs;       // (dir, microbatch, chunk)
  // A hand-off between two chunks of this device (the fold of a V-shaped
  // schedule): no transfer, the tensor itself, keyed like `recvs`.
  std::map<std::tuple<int, int, int>, at::Tensor> local;
  SendReaper sends;
  std::int64_t iteration = 0;
  std::int64_t first_iteration = 0;  // async: data position of microbatch 0 of the program
  bool async = false;
  bool stepped = false;
  std::map<int, std::shared_ptr<Stash>> current_stash;  // chunk -> stash of the live weights

  Impl(const JobSpec& j, const Plan& p, const Schedule& s, int d, PG g, TrainData& dt, EventSink* es)
      : job(j), plan(p), sched(&s), device(d), devices(s.devices()), vstages(s.virtual_stages()),
        microbatches(s.microbatches()), pg(std::move(g)), data(dt), sink(es),
        memory(d, static_cast<std::int64_t>(j.cluster.device.memory_bytes)) {
    async = !s.flushes();
    if (static_cast<int>(plan.stages.size()) != vstages)
      throw std::invalid_argument("plan has " + std::to_string(plan.stages.size()) + " stages, schedule needs " +
                                  std::to_string(vstages));
    memory.set_baseline(TensorBytes::live());
    layers = build_layers(job);
    if (static_cast<int>(layers.size()) != plan.layer_count())
      throw std::invalid_argument("plan covers " + std::to_string(plan.layer_count()) + " layers, model has " +
                                  std::to_string(layers.size()));
    shapes = layer_boundary_shapes(layers, model_input_shape(job), model_takes_tokens(job));
    for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
      if (device_of(plan.stage_of(l)) != device) {
        layers[l] = nullptr;
        continue;
      }
      for (auto& t : layers[l]->parameters()) params.push_back(t);
      for (auto& t : layers[l]->buffers()) buffers.push_back(t);
    }
    const auto& t = job.training;
    if (t.optimizer == "adam")
      optimizer = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(t.lr));
    else
      optimizer = std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(t.lr).momentum(t.optimizer == "momentum" ? 0.9 : 0.0));
    update_static();
    TensorBytes::reset_peak();
    memory.check("model construction");
  }

  void update_static() {
    std::int64_t p = 0, g = 0;
    for (auto& t : params) {
      p += t.nbytes();
      if (t.grad().defined()) g += t.grad().nbytes();
    }
    const auto& o = job.training.optimizer;
    std::int64_t opt = !stepped ? 0 : o == "adam" ? 2 * p : o == "momentum" ? p : 0;
    std::set<Stash*> stashes;
    std::int64_t stashed = 0;
    for (auto& [k, st] : state)
      if (st.stash && stashes.insert(st.stash.get()).second) stashed += st.stash->bytes;
    memory.set_static(p, g, opt, stashed);
  }

  void emit(EventKind k, std::int64_t t0, int mb, int chunk, std::int64_t bytes = 0) {
    if (!sink) return;
    Event e;
    e.start_ns = t0;
    e.end_ns = steady_now_ns();
    e.kind = k;
    e.stage = device;
    e.microbatch = mb;
    e.chunk = static_cast<std::int16_t>(chunk);
    e.bytes = bytes;
    if (chunk >= 0 && k != EventKind::OptimizerStep) {
      const auto& r = plan.stages[sched->virtual_stage(device, chunk)];
      e.first_layer = r.first_layer;
      e.last_layer = r.last_layer;
    }
    sink->on_event(e);
  }

  // The schedule alone says where a virtual stage runs (interleaved and
  // V-shaped placements differ), so the executor asks it, never assumes.
  int device_of(int vstage) const { return sched->device_of_virtual_stage(vstage); }
  int chunk_of(int vstage) const { return sched->chunk_of_virtual_stage(vstage); }
  int peer_of(int vstage) const { return device_of(vstage); }
  // Microbatch number across iterations (async programs number them so).
  std::int64_t global_mb(int mb) const { return async ? mb : iteration * microbatches + mb; }
  int tag(Dir dir, int mb, int vstage) const {
    // Unique within a window of microbatches; gloo matches equal tags in order.
    return static_cast<int>(((global_mb(mb) % 65536) * vstages + vstage) * 2 + dir);
  }
  Batch batch_of(int mb) {
    if (!async) return data.microbatch(iteration, mb);
    return data.microbatch(first_iteration + mb / microbatches, mb % microbatches);
  }
  torch::nn::Sequential& layer_of(MicrobatchState& st, int l, int first) {
    return st.stash ? st.stash->layers[l - first] : layers[l];
  }
  // The weights a forward uses: live ones, or (async, > 1 version) a stash
  // shared by every microbatch that starts before the next update.
  std::shared_ptr<Stash> stash_for(int chunk) {
    if (!async || sched->weight_versions(device) <= 1) return nullptr;
    auto& cur = current_stash[chunk];
    if (cur) return cur;
    cur = std::make_shared<Stash>();
    const auto& r = plan.stages[sched->virtual_stage(device, chunk)];
    for (int l = r.first_layer; l <= r.last_layer; ++l) {
      auto c = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(layers[l]->clone());
      cur->layers.push_back(torch::nn::Sequential(c));
      for (auto& t : c->parameters()) cur->bytes += t.nbytes();
    }
    return cur;
  }

  // Receives: activation into virtual stage v, or the gradient of v's output.
  void post_recv(Dir dir, int mb, int chunk) {
    auto key = std::make_tuple(static_cast<int>(dir), mb, chunk);
    if (recvs.count(key)) return;
    int v = sched->virtual_stage(device, chunk);
    int peer = peer_of(dir == kActivation ? v - 1 : v + 1);
    if (peer == device) return;  // a local hand-off
    const auto& r = plan.stages[v];
    Comm c;
    c.buf.push_back(at::empty(dir == kActivation ? shapes[r.first_layer] : shapes[r.last_layer + 1]));
    c.work = pg->recv(c.buf, peer, tag(dir, mb, v));
    recvs.emplace(key, std::move(c));
  }
  at::Tensor take_recv(Dir dir, int mb, int chunk) {
    auto key = std::make_tuple(static_cast<int>(dir), mb, chunk);
    if (auto l = local.find(key); l != local.end()) {
      at::Tensor t = l->second;
      local.erase(l);
      return t;
    }
    int v = sched->virtual_stage(device, chunk);
    if (peer_of(dir == kActivation ? v - 1 : v + 1) == device)
      throw std::logic_error("the schedule runs microbatch " + std::to_string(mb) + " on virtual stage " +
                             std::to_string(v) + " before this device produced its " +
                             (dir == kActivation ? "input" : "output gradient"));
    post_recv(dir, mb, chunk);
    auto it = recvs.find(std::make_tuple(static_cast<int>(dir), mb, chunk));
    std::int64_t t0 = steady_now_ns();
    it->second.work->wait();
    at::Tensor t = it->second.buf[0];
    recvs.erase(it);
    emit(EventKind::Recv, t0, mb, chunk, t.nbytes());
    return t;
  }
  void send(Dir dir, int mb, int chunk, const at::Tensor& t) {
    int v = sched->virtual_stage(device, chunk);
    int to = dir == kActivation ? v + 1 : v - 1;
    if (peer_of(to) == device) {
      local[std::make_tuple(static_cast<int>(dir), mb, chunk_of(to))] = t;
      return;
    }
    std::int64_t t0 = steady_now_ns();
    Comm c;
    c.buf.push_back(t.contiguous());
    // The receiver's tag names the virtual stage that receives (activation)
    // or whose output the gradient belongs to.
    c.work = pg->send(c.buf, peer_of(to), tag(dir, mb, dir == kActivation ? to : to));
    sends.push(std::move(c.buf), std::move(c.work));
    emit(EventKind::Send, t0, mb, chunk, t.nbytes());
  }
  void wait_sends() {
    sends.drain();
  }

  // Posts the receives the next actions will need, so a peer's send never waits on us.
  void prefetch(std::int64_t from, std::int64_t limit_mb = -1) {
    std::int64_t n = sched->length(device);
    for (std::int64_t i = from; i < std::min(n, from + 2); ++i) {
      Action a = sched->action(device, i);
      if (limit_mb >= 0 && a.microbatch >= limit_mb) continue;
      int v = sched->virtual_stage(device, a.chunk);
      if (a.kind == ActionKind::Forward && v > 0) post_recv(kActivation, a.microbatch, a.chunk);
      bool needs_gradient = a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardInput;
      if (needs_gradient && v < vstages - 1) post_recv(kGradient, a.microbatch, a.chunk);
    }
  }

  double forward(int mb, int chunk) {
    int v = sched->virtual_stage(device, chunk);
    const auto& r = plan.stages[v];
    Batch batch;
    at::Tensor x;
    if (v == 0 || v == vstages - 1) batch = batch_of(mb);
    if (v == 0)
      x = batch.input;
    else
      x = take_recv(kActivation, mb, chunk);
    std::int64_t t0 = steady_now_ns();
    MicrobatchState& st = state[{mb, chunk}];
    st.layers.resize(r.size());
    st.stash = stash_for(chunk);
    for (int l = r.first_layer; l <= r.last_layer; ++l) {
      LayerState& ls = st.layers[l - r.first_layer];
      bool grad_in = !(v == 0 && l == r.first_layer);
      at::Tensor in = grad_in ? x.detach().requires_grad_(true) : x;
      MemoryPolicy pol = plan.policy[l];
      at::Tensor out;
      if (pol == MemoryPolicy::Keep) {
        out = layer_of(st, l, r.first_layer)->forward(in);
        ls.in = in;
        ls.out = out;
      } else if (pol == MemoryPolicy::Recompute) {
        torch::NoGradGuard ng;
        out = layer_of(st, l, r.first_layer)->forward(in);
        ls.in = in;
      } else {
        auto& layer = layer_of(st, l, r.first_layer);
        ls.swap = std::make_unique<SwappedActivations>();
        {
          std::vector<at::Tensor> resident = layer->parameters();
          for (auto& b : layer->buffers()) resident.push_back(b);
          SwappedActivations::Capture capture(*ls.swap, resident);
          out = layer->forward(in);
        }
        if (grad_in) {
          ls.in = in;
          ls.swap->track_leaf(in);
        }
        ls.root = torch::autograd::impl::gradient_edge(out);
        std::int64_t s0 = steady_now_ns();
        // The host pool lives outside the device account (see memory.h).
        std::int64_t bytes = ls.swap->swap_out();
        memory.add_host(bytes);
        emit(EventKind::SwapOut, s0, mb, chunk, bytes);
      }
      x = out;
    }
    double loss = NAN;
    if (v == vstages - 1) {
      at::Tensor logits = x.detach().requires_grad_(true);
      // Flush schedules accumulate the batch's gradient over microbatches;
      // PipeDream updates after every microbatch.
      at::Tensor l = pipeline_loss(logits, batch.target) / (async ? 1 : microbatches);
      l.backward();
      st.out_grad = logits.grad();
      loss = l.item<double>();
    }
    emit(EventKind::Forward, t0, mb, chunk);
    if (v < vstages - 1) send(kActivation, mb, chunk, x.detach());
    memory.check("forward");
    return loss;
  }

  MicrobatchState& state_of(int mb, int chunk, const char* what) {
    auto it = state.find({mb, chunk});
    if (it == state.end())
      throw std::logic_error(std::string(what) + " of microbatch " + std::to_string(mb) + " before its forward");
    return it->second;
  }

  // The layer's output with its graph, for a backward: kept, recomputed
  // now (the recompute policy), or swapped back in (its root edge).
  torch::autograd::Edge output_root(MicrobatchState& st, LayerState& ls, int l, int first, int mb, int chunk) {
    if (ls.swap) {
      std::int64_t s0 = steady_now_ns();
      std::int64_t bytes = ls.swap->swap_in();
      memory.add_host(-bytes);
      emit(EventKind::SwapIn, s0, mb, chunk, bytes);
      return ls.root;
    }
    if (!ls.out.defined()) {
      std::int64_t s0 = steady_now_ns();
      ls.out = layer_of(st, l, first)->forward(ls.in);
      emit(EventKind::Recompute, s0, mb, chunk);
    }
    return torch::autograd::impl::gradient_edge(ls.out);
  }

  void release(LayerState& ls) {
    ls.out = at::Tensor();
    ls.in = at::Tensor();
    ls.root = torch::autograd::Edge();
    ls.swap.reset();
  }

  // The stashed version's gradients belong to the live weights' update.
  void fold_stash_gradients(MicrobatchState& st, const StageRange& r) {
    if (!st.stash) return;
    torch::NoGradGuard ng;
    std::vector<at::Tensor> from;
    for (auto& m : st.stash->layers)
      for (auto& t : m->parameters()) from.push_back(t);
    std::vector<at::Tensor> to;
    for (int l = r.first_layer; l <= r.last_layer; ++l)
      for (auto& t : layers[l]->parameters()) to.push_back(t);
    for (size_t i = 0; i < to.size(); ++i) {
      if (!from[i].grad().defined()) continue;
      if (to[i].grad().defined())
        to[i].mutable_grad().add_(from[i].grad());
      else
        to[i].mutable_grad() = from[i].grad().clone();
      from[i].mutable_grad() = at::Tensor();
    }
  }

  // The fused backward: input and weight gradients in one pass per layer.
  void backward(int mb, int chunk) {
    int v = sched->virtual_stage(device, chunk);
    const auto& r = plan.stages[v];
    MicrobatchState& st = state_of(mb, chunk, "backward");
    at::Tensor g = v == vstages - 1 ? st.out_grad : take_recv(kGradient, mb, chunk);
    std::int64_t t0 = steady_now_ns();
    for (int l = r.last_layer; l >= r.first_layer; --l) {
      LayerState& ls = st.layers[l - r.first_layer];
      bool grad_in = !(v == 0 && l == r.first_layer);
      torch::autograd::Edge root = output_root(st, ls, l, r.first_layer, mb, chunk);
      if (root.function)
        torch::autograd::Engine::get_default_engine().execute({root}, {g}, /*keep_graph=*/false,
                                                                /*create_graph=*/false, /*accumulate_grad=*/true);
      if (grad_in) g = ls.in.grad();
      release(ls);
    }
    fold_stash_gradients(st, r);
    state.erase({mb, chunk});
    // The send is its own event: the cost model prices it apart, and
    // in-situ calibration reads backward events as compute alone.
    emit(EventKind::Backward, t0, mb, chunk);
    if (v > 0) send(kGradient, mb, chunk, g);
    update_static();
    memory.check("backward");
  }

  // B of a split backward: the gradient of the stage's input, layer by
  // layer, sent upstream at once; every layer keeps its graph (and, under
  // recompute or swap, the recomputed or swapped-in activations) for W.
  void backward_input(int mb, int chunk) {
    int v = sched->virtual_stage(device, chunk);
    const auto& r = plan.stages[v];
    MicrobatchState& st = state_of(mb, chunk, "input gradient");
    if (st.input_gradient_done)
      throw std::logic_error("input gradient of microbatch " + std::to_string(mb) + " twice");
    at::Tensor g = v == vstages - 1 ? st.out_grad : take_recv(kGradient, mb, chunk);
    st.out_grad = at::Tensor();
    std::int64_t t0 = steady_now_ns();
    for (int l = r.last_layer; l >= r.first_layer; --l) {
      LayerState& ls = st.layers[l - r.first_layer];
      bool grad_in = !(v == 0 && l == r.first_layer);
      torch::autograd::Edge root = output_root(st, ls, l, r.first_layer, mb, chunk);
      at::Tensor d_in =
          ls.split.input_gradient(root, g, grad_in ? ls.in : at::Tensor(), layer_of(st, l, r.first_layer)->parameters());
      if (grad_in) g = d_in;
    }
    st.input_gradient_done = true;
    emit(EventKind::BackwardInput, t0, mb, chunk);
    if (v > 0) send(kGradient, mb, chunk, g);
    memory.check("input gradient");
  }

  // W of a split backward: the weight gradients accumulate into .grad as
  // the fused backward would have; the graph and what B kept go.
  void backward_weight(int mb, int chunk) {
    int v = sched->virtual_stage(device, chunk);
    const auto& r = plan.stages[v];
    MicrobatchState& st = state_of(mb, chunk, "weight gradient");
    if (!st.input_gradient_done)
      throw std::logic_error("weight gradient of microbatch " + std::to_string(mb) + " before its input gradient");
    std::int64_t t0 = steady_now_ns();
    for (int l = r.last_layer; l >= r.first_layer; --l) {
      LayerState& ls = st.layers[l - r.first_layer];
      ls.split.weight_gradient();
      release(ls);
    }
    fold_stash_gradients(st, r);
    state.erase({mb, chunk});
    emit(EventKind::BackwardWeight, t0, mb, chunk);
    update_static();
    memory.check("weight gradient");
  }

  // Gradient clipping and the non-finite check look at the whole model's
  // gradient: every stage all-reduces its share (sum of squares, count of
  // non-finite values) at its optimizer step, a synchronisation point of
  // the pipeline (the ZB paper's post-validation would step optimistically
  // and roll back instead; here the step waits for the slowest stage's last
  // weight gradient, which a flush schedule's iteration ends with anyway).
  // Then every stage scales by the same factor, or skips the same step.
  // Returns false when the step is to be skipped.
  bool whole_pipeline_gradient_ok() {
    const auto& t = job.training;
    if (t.clip_grad_norm <= 0 && !t.skip_nonfinite) return true;
    double sum_sq = 0, nonfinite = 0;
    for (auto& p : params)
      if (p.grad().defined()) {
        // Per-tensor norms, as torch::nn::utils::clip_grad_norm_ takes them.
        double n = p.grad().norm().item<double>();
        sum_sq += n * n;
        nonfinite += static_cast<double>(p.grad().isfinite().logical_not().sum().item<std::int64_t>());
      }
    std::vector<at::Tensor> buf{at::tensor({sum_sq, nonfinite}, at::kDouble)};
    pg->allreduce(buf)->wait();
    sum_sq = buf[0][0].item<double>();
    nonfinite = buf[0][1].item<double>();
    if (t.skip_nonfinite && nonfinite > 0) return false;
    if (t.clip_grad_norm > 0) {
      double coef = t.clip_grad_norm / (std::sqrt(sum_sq) + 1e-6);
      if (coef < 1) {
        torch::NoGradGuard ng;
        for (auto& p : params)
          if (p.grad().defined()) p.mutable_grad().mul_(coef);
      }
    }
    return true;
  }

  // `progress`: iterations done before this step (fractional when stepping
  // per microbatch), which sets the scheduled learning rate.
  void step(double progress) {
    wait_sends();  // communication, not the step's compute
    std::int64_t t0 = steady_now_ns();
    const double lr = learning_rate_at(job.training, progress);
    for (auto& group : optimizer->param_groups()) group.options().set_lr(lr);
    if (whole_pipeline_gradient_ok()) optimizer->step();
    optimizer->zero_grad();
    stepped = true;
    current_stash.clear();  // the next forward stashes the new version
    update_static();
    emit(EventKind::OptimizerStep, t0, -1, -1);
    memory.check("optimizer step");
  }

  double run_iteration(std::int64_t it) {
    iteration = it;
    double loss = 0;
    bool last = false;
    std::int64_t n = sched->length(device);
    for (std::int64_t i = 0; i < n; ++i) {
      prefetch(i);
      Action a = sched->action(device, i);
      switch (a.kind) {
        case ActionKind::Forward: {
          double l = forward(a.microbatch, a.chunk);
          if (!std::isnan(l)) {
            loss += l;
            last = true;
          }
          break;
        }
        case ActionKind::Backward:
          backward(a.microbatch, a.chunk);
          break;
        case ActionKind::BackwardInput:
          backward_input(a.microbatch, a.chunk);
          break;
        case ActionKind::BackwardWeight:
          backward_weight(a.microbatch, a.chunk);
          break;
        case ActionKind::OptimizerStep:
          step(static_cast<double>(it));
          break;
      }
    }
    wait_sends();
    return last ? loss : NAN;
  }

  // PipeDream: one program without flushes over all remaining iterations'
  // microbatches; every backward is followed by this stage's update.
  void run_async(std::int64_t first, std::int64_t iterations, const std::function<void(std::int64_t, double)>& on_loss) {
    first_iteration = first;
    std::int64_t total = (iterations - first) * microbatches;
    if (total <= 0) return;
    // The schedule spans 2 x its microbatches; actions past `total` are skipped alike on every stage.
    program = make_schedule(ScheduleKind::AsyncOneFOneB, devices, static_cast<int>((total + 1) / 2), 1);
    sched = program.get();
    std::map<std::int64_t, std::pair<double, int>> losses;
    std::int64_t n = sched->length(device);
    for (std::int64_t i = 0; i < n; ++i) {
      Action a = sched->action(device, i);
      if (a.microbatch >= total) continue;
      prefetch(i, total);
      switch (a.kind) {
        case ActionKind::Forward: {
          double l = forward(a.microbatch, a.chunk);
          if (!std::isnan(l)) {
            std::int64_t it = first + a.microbatch / microbatches;
            auto& acc = losses[it];
            acc.first += l / microbatches;
            if (++acc.second == microbatches) {
              on_loss(it, acc.first);
              losses.erase(it);
            }
          }
          break;
        }
        case ActionKind::Backward:
          backward(a.microbatch, a.chunk);
          break;
        case ActionKind::BackwardInput:
          backward_input(a.microbatch, a.chunk);
          break;
        case ActionKind::BackwardWeight:
          backward_weight(a.microbatch, a.chunk);
          break;
        case ActionKind::OptimizerStep:
          step(first + static_cast<double>(a.microbatch) / microbatches);
          break;
      }
    }
    wait_sends();
  }

  double evaluate(const Dataset& test) {
    torch::NoGradGuard ng;
    const int b = job.training.microbatch_size;
    const int base = 1 << 28;  // a tag range of its own
    int64_t correct = 0, seen = 0;
    // This device's virtual stages in model order (a V-shaped placement
    // holds its second chunk's stage after the first's, both in order).
    std::vector<int> mine;
    for (int chunk = 0; chunk < sched->chunks(); ++chunk) mine.push_back(sched->virtual_stage(device, chunk));
    std::sort(mine.begin(), mine.end());
    for (int64_t k = 0; k * b < test.size(); ++k) {
      int64_t n = std::min<int64_t>(b, test.size() - k * b);
      at::Tensor handed;  // the output of this device's previous virtual stage, when the next is here too
      for (int v : mine) {
        const auto& r = plan.stages[v];
        at::Tensor x;
        if (v == 0) {
          x = test.inputs.narrow(0, k * b, n);
        } else if (peer_of(v - 1) == device) {
          x = handed;
        } else {
          auto shape = shapes[r.first_layer];
          shape[0] = n;
          std::vector<at::Tensor> buf{at::empty(shape)};
          pg->recv(buf, peer_of(v - 1), base + v)->wait();
          x = buf[0];
        }
        for (int l = r.first_layer; l <= r.last_layer; ++l) x = layers[l]->forward(x);
        if (v < vstages - 1 && peer_of(v + 1) == device) {
          handed = x;
        } else if (v < vstages - 1) {
          std::vector<at::Tensor> buf{x.contiguous()};
          pg->send(buf, peer_of(v + 1), base + v + 1)->wait();
        } else {
          // Classes, or tokens (positions labelled -100 are not scored).
          auto labels = test.labels.narrow(0, k * b, n);
          auto scored = labels.ne(-100);
          correct += x.argmax(-1).eq(labels).logical_and(scored).sum().item<int64_t>();
          seen += scored.sum().item<int64_t>();
        }
      }
    }
    return seen ? static_cast<double>(correct) / seen : NAN;
  }
};

StageExecutor::StageExecutor(const JobSpec& job, const Plan& plan, const Schedule& schedule, int device, PG pg,
                             TrainData& data, EventSink* sink)
    : impl_(std::make_unique<Impl>(job, plan, schedule, device, std::move(pg), data, sink)) {
  if (schedule.kind() == ScheduleKind::AsyncOneFOneB && schedule.chunks() != 1)
    throw std::invalid_argument("async 1F1B runs with one chunk per device");
}
StageExecutor::~StageExecutor() = default;
double StageExecutor::run_iteration(std::int64_t it) {
  if (impl_->async) throw std::logic_error("async schedules run as one program: use run_async");
  return impl_->run_iteration(it);
}
bool StageExecutor::flushes() const { return !impl_->async; }
bool StageExecutor::computes_loss() const { return impl_->device_of(impl_->vstages - 1) == impl_->device; }
void StageExecutor::run_async(std::int64_t first, std::int64_t iterations,
                              const std::function<void(std::int64_t, double)>& on_loss) {
  impl_->run_async(first, iterations, on_loss);
}
double StageExecutor::evaluate(const Dataset& test) { return impl_->evaluate(test); }
std::vector<at::Tensor> StageExecutor::parameters() const { return impl_->params; }
StageMemory& StageExecutor::memory() { return impl_->memory; }
// Migration hooks (engine/runtime/migration).
torch::nn::Sequential StageExecutor::layer(int l) const { return impl_->layers.at(l); }
torch::optim::Optimizer& StageExecutor::optimizer() { return *impl_->optimizer; }

void StageExecutor::save(const std::string& file) const {
  torch::serialize::OutputArchive a;
  for (size_t i = 0; i < impl_->params.size(); ++i) a.write("p" + std::to_string(i), impl_->params[i]);
  for (size_t i = 0; i < impl_->buffers.size(); ++i) a.write("b" + std::to_string(i), impl_->buffers[i]);
  torch::serialize::OutputArchive o;
  impl_->optimizer->save(o);
  a.write("optimizer", o);
  // Serialised in memory, written by us: libtorch's file writer aborts the
  // process when a write fails (its destructor throws again), so a full disk
  // would read "killed by signal 6" instead of naming the file and ENOSPC.
  std::ostringstream bytes;
  a.save_to(bytes);
  write_file_atomically(file, bytes.view(), "stage state");
}

void StageExecutor::load(const std::string& file) {
  torch::serialize::InputArchive a;
  a.load_from(file);
  torch::NoGradGuard ng;
  for (size_t i = 0; i < impl_->params.size(); ++i) {
    at::Tensor t;
    a.read("p" + std::to_string(i), t);
    impl_->params[i].copy_(t);
  }
  for (size_t i = 0; i < impl_->buffers.size(); ++i) {
    at::Tensor t;
    if (a.try_read("b" + std::to_string(i), t)) impl_->buffers[i].copy_(t);
  }
  torch::serialize::InputArchive o;
  a.read("optimizer", o);
  impl_->optimizer->load(o);
  impl_->stepped = true;
  impl_->update_static();
}

std::vector<at::Tensor> load_stage_parameters(const std::string& file) {
  torch::serialize::InputArchive a;
  a.load_from(file);
  std::vector<at::Tensor> out;
  for (int i = 0;; ++i) {
    at::Tensor t;
    if (!a.try_read("p" + std::to_string(i), t)) break;
    out.push_back(t);
  }
  return out;
}

}  // namespace pw::rt

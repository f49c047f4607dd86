// The CUDA side of the device seams, on a GPU: compiled by every build
// (CUDA through c10's generic APIs and torch::cuda), skipped where no GPU
// is visible. On the GPU machine they run in pw_gpu_tests (ctest -L gpu)
// (PW_TIMING=1 adds the wall-clock comparison).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/cuda.h>
#include <optional>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include "../timing_checks.h"
#include "core/events/clock.h"
#include "runtime/activation_swap.h"
#include "runtime/device_memory.h"
#include "runtime/event_clock.h"
#include "runtime/profiler.h"

namespace pw::rt {
namespace {

#define PW_NEEDS_GPU()                                                         \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible"; \
  const c10::Device gpu(c10::kCUDA, 0)

TEST(CudaSeams, TheMeterCountsWhatTensorsHoldOnTheDevice) {
  PW_NEEDS_GPU();
  DeviceMemory& m = device_memory(gpu);
  std::int64_t before = m.live();
  m.reset_peak();
  {
    // 1 MiB: a multiple of the allocator's 512-byte rounding, so exact.
    at::Tensor t = at::empty({1 << 18}, at::TensorOptions().dtype(at::kFloat).device(gpu));
    EXPECT_EQ(m.live() - before, 1 << 20);
  }
  EXPECT_EQ(m.live(), before);
  EXPECT_EQ(m.peak() - before, 1 << 20);
  m.reset_peak();
  EXPECT_EQ(m.peak(), m.live());
}

// A layer's forward and backward under swap give bitwise keep's gradients,
// with other kernels queued between the swap-out and the swap-in.
void expect_swap_gives_keeps_gradients(c10::Device dev) {
  torch::manual_seed(3);
  torch::nn::Sequential layer(torch::nn::Linear(256, 512), torch::nn::ReLU(), torch::nn::Linear(512, 64));
  layer->to(dev);
  at::Tensor x = at::randn({128, 256}, at::TensorOptions().device(dev));
  at::Tensor g = at::randn({128, 64}, at::TensorOptions().device(dev));
  auto grads = [&](bool swap) {
    for (auto& p : layer->parameters()) p.mutable_grad() = at::Tensor();
    at::Tensor in = x.detach().requires_grad_(true);
    SwappedActivations saved;
    at::Tensor out;
    {
      std::vector<at::Tensor> resident = layer->parameters();
      std::optional<SwappedActivations::Capture> capture;
      if (swap) capture.emplace(saved, resident);
      out = layer->forward(in);
    }
    auto root = torch::autograd::impl::gradient_edge(out);
    if (swap) {
      saved.track_leaf(in);
      EXPECT_GT(saved.swap_out(), 0);
      at::Tensor busy = at::randn({1024, 1024}, at::TensorOptions().device(dev));
      for (int i = 0; i < 8; ++i) busy = busy.mm(busy).tanh();
      out = at::Tensor();
      EXPECT_GT(saved.swap_in(), 0);
    }
    torch::autograd::Engine::get_default_engine().execute({root}, {g}, false, false, true);
    std::vector<at::Tensor> r;
    for (auto& p : layer->parameters()) r.push_back(p.grad().cpu());
    r.push_back(in.grad().cpu());
    return r;
  };
  auto keep = grads(false), swapped = grads(true);
  ASSERT_EQ(keep.size(), swapped.size());
  for (std::size_t i = 0; i < keep.size(); ++i) EXPECT_TRUE(at::equal(keep[i], swapped[i])) << i;
}

TEST(CudaSeams, SwapOnTheCopyStreamGivesKeepsGradients) {
  PW_NEEDS_GPU();
  expect_swap_gives_keeps_gradients(gpu);
}
// The same check on CPU, so the check itself runs everywhere.
TEST(CudaSeams, SwapGivesKeepsGradientsOnCpuToo) { expect_swap_gives_keeps_gradients(c10::Device(c10::kCPU)); }

// Marks around queued kernels time the kernels: between the host's launch
// and its synchronisation, and longer than the launches took.
TEST(CudaSeams, TheEventClockTimesTheDeviceNotTheLaunches) {
  PW_NEEDS_GPU();
  auto clock = make_event_clock(gpu);
  EXPECT_FALSE(clock->immediate());
  at::Tensor a = at::randn({4096, 4096}, at::TensorOptions().device(gpu));
  torch::cuda::synchronize();
  std::int64_t h0 = steady_now_ns();
  auto m0 = clock->mark();
  for (int i = 0; i < 20; ++i) a = a.mm(a).tanh();
  auto m1 = clock->mark();
  std::int64_t launched = steady_now_ns();
  clock->resolve();
  std::int64_t h1 = steady_now_ns();
  std::int64_t t0 = clock->host_ns(m0), t1 = clock->host_ns(m1);
  EXPECT_LE(t0, t1);
  EXPECT_GE(t0, h0 - 1'000'000);  // the conversion's error: the anchor's wake-up, far under 1 ms
  EXPECT_LE(t1, h1);
  if (::pw::test::timing_checks()) EXPECT_GT(t1 - t0, launched - h0) << "20 4096^2 matmuls ran faster than their launch";
}

// `pipewright profile` on a GPU machine measures where a stage computes:
// on the GPU, timed by its clock and metered by its allocator (issue 27).
TEST(CudaSeams, TheProfilerMeasuresOnTheGpu) {
  PW_NEEDS_GPU();
  JobSpec job = parse_job(nlohmann::json::parse(R"({"name": "p", "model": {"kind": "mlp", "input": 1024,
      "widths": [4096, 4096], "classes": 10}, "data": {"kind": "synthetic", "samples": 256},
      "training": {"batch_size": 256, "microbatch_size": 64}, "cluster": {"devices": 1, "device": "h200"},
      "pipeline": {"stages": 1}})"));
  EXPECT_EQ(profile_device("auto"), gpu);
  const ModelProfile p = measure_profile(job, {3, 1});
  ASSERT_FALSE(p.assumptions.empty());
  EXPECT_NE(p.assumptions.back().find("measured on cuda:0"), std::string::npos) << p.assumptions.back();
  for (const auto& l : p.layers) {
    EXPECT_GT(l.fwd_ms, 0) << l.name;
    EXPECT_GT(l.bwd_ms, 0) << l.name;
    // The device's allocator saw what the forward keeps: more than its input.
    EXPECT_GT(l.activation_bytes, l.input_bytes) << l.name;
  }
}

}  // namespace
}  // namespace pw::rt

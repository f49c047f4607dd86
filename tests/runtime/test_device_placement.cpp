// cluster.backend in the runtime (issue 18), on a machine without CUDA:
// the agreement through a real store, the process-group factory, and the
// placement helpers, which on a CPU stage must leave tensors as they were.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/cuda.h>

#include <thread>

#include "core/spec/spec_error.h"
#include "runtime/device_placement.h"
#include "runtime/process_group.h"
#include "runtime/rendezvous.h"
#include "runtime/transport_agreement.h"

using namespace pw;
using namespace pw::rt;

namespace {
// Every rank of a `world` agreeing at once, each in its own thread; an
// error message where a rank's agreement threw.
std::vector<std::string> agree_all(int world, const std::string& requested, std::vector<TransportChoice>& out) {
  LocalStoreDir dir;
  auto store = c10::make_intrusive<c10d::FileStore>(dir.file(), world);
  out.assign(world, {});
  std::vector<std::string> errors(world);
  std::vector<std::thread> ts;
  for (int r = 0; r < world; ++r)
    ts.emplace_back([&, r] {
      try {
        out[r] = agree_transport(*store, r, world, r, requested);
      } catch (const SpecError& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : ts) t.join();
  return errors;
}
}  // namespace

TEST(DevicePlacement, EveryRankAgreesOnGlooWithoutCuda) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA";
  std::vector<TransportChoice> c;
  auto errors = agree_all(3, "auto", c);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(c[r].backend, "gloo");
    EXPECT_EQ(c[r].reason, "gloo: no CUDA");
    ASSERT_EQ(c[r].stages.size(), 3u);
    StageDevice d = StageDevice::from(c[r], r);
    EXPECT_TRUE(d.device.is_cpu());
    EXPECT_FALSE(d.host_staged);
    EXPECT_EQ(d.describe(), "gloo: no CUDA; stage on cpu");
  }
  errors = agree_all(2, "nccl", c);
  for (const auto& e : errors)
    EXPECT_EQ(e, "cluster.backend: \"nccl\" needs CUDA, and no stage sees a GPU (use \"auto\" or \"gloo\")");
  EXPECT_THROW(local_transport("nccl", 2), SpecError);
  EXPECT_EQ(local_transport("auto", 4).reason, "gloo: no CUDA");
}

TEST(DevicePlacement, TheFactoryBuildsAWorkingGlooGroupAndRefusesNcclWithoutIt) {
  LocalStoreDir dir;
  auto store = c10::make_intrusive<c10d::FileStore>(dir.file(), 2);
  GlooGroupOptions opt{.prefix = "t", .timeout = std::chrono::seconds(60), .threads = 1, .device = nullptr};
  c10::intrusive_ptr<c10d::ProcessGroup> g0, g1;
  std::thread t([&] { g1 = make_process_group("gloo", store, 1, 2, opt); });
  g0 = make_process_group("gloo", store, 0, 2, opt);
  t.join();
  std::vector<at::Tensor> out{at::arange(6, at::kFloat)}, in{recv_buffer({6}, StageDevice{})};
  auto recv = g1->recv(in, 0, 3);
  g0->send(out, 1, 3)->wait();
  recv->wait();
  EXPECT_TRUE(at::equal(in[0], at::arange(6, at::kFloat)));
  EXPECT_THROW(make_process_group("mpi", store, 0, 2, opt), std::invalid_argument);
  if (!nccl_built()) {
    EXPECT_THROW(make_process_group("nccl", store, 0, 2, opt), std::runtime_error);
  }
}

// A CPU stage: the very tensors (no copy) except a send's contiguous copy
// of a strided view, so CPU runs stay bitwise what they were.
TEST(DevicePlacement, ACpuStageLeavesTensorsWhereTheyAre) {
  StageDevice cpu;
  at::Tensor t = at::randn({3, 4});
  EXPECT_EQ(from_wire(t, cpu).data_ptr(), t.data_ptr());
  EXPECT_EQ(to_wire(t, cpu).data_ptr(), t.data_ptr());
  EXPECT_EQ(on_device(t, cpu).data_ptr(), t.data_ptr());
  at::Tensor view = t.t();
  at::Tensor sent = to_wire(view, cpu);
  EXPECT_TRUE(sent.is_contiguous());
  EXPECT_TRUE(at::equal(sent, view));
  at::Tensor buf = recv_buffer({2, 5}, cpu);
  EXPECT_EQ(buf.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(buf.scalar_type(), at::kFloat);
  EXPECT_TRUE(buf.device().is_cpu());
  make_current(cpu);  // nothing to do, and nothing thrown
}

// The mapping from a choice to a GPU stage's device, without touching CUDA.
TEST(DevicePlacement, AHostStagedGpuStageReceivesOnTheHost) {
  TransportChoice c = choose_transport("auto", {{"h", 0, 2}, {"h", 1, 2}, {"h", 2, 2}}, true);
  StageDevice d = StageDevice::from(c, 1);
  EXPECT_EQ(d.device, c10::Device(c10::kCUDA, 1));
  EXPECT_TRUE(d.host_staged);
  EXPECT_TRUE(d.wire().is_cpu());
  EXPECT_EQ(d.describe(), "gloo over host-staged copies: stages 0 and 2 share cuda:0; stage on cuda:1");
  c = choose_transport("auto", {{"h", 0, 2}, {"h", 1, 2}}, true);
  d = StageDevice::from(c, 0);
  EXPECT_EQ(d.backend, "nccl");
  EXPECT_FALSE(d.host_staged);
  EXPECT_EQ(d.wire(), c10::Device(c10::kCUDA, 0));  // NCCL reads the GPU's memory
}

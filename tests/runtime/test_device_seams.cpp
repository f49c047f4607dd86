// The seams a CUDA build fills in (device_memory.h, event_clock.h), run on
// CPU: the budget follows whatever meter the stage's device has, and a
// device clock's deferred stamping delivers the events a host clock would,
// converted at one synchronisation per iteration, with the same losses.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <chrono>
#include <cmath>
#include <memory>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/events/clock.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "runtime/data.h"
#include "runtime/device_memory.h"
#include "runtime/event_clock.h"
#include "runtime/memory.h"
#include "runtime/process_group.h"
#include "runtime/rendezvous.h"
#include "run_helpers.h"

namespace pw::rt {
namespace {

// A device whose timeline the test sets: each record stamps slot `slot`
// with the current `now_ms`.
struct Timeline {
  double now_ms = 0;
  std::vector<double> slots;
  std::vector<std::size_t> syncs;  // slots waited for, in order
  bool follow_host = false;        // now_ms from the host's steady clock at each record
};

class ScriptedTimer final : public DeviceTimer {
 public:
  explicit ScriptedTimer(Timeline* t) : t_(t) {}
  void record(std::size_t slot) override {
    if (t_->follow_host) t_->now_ms = steady_now_ns() * 1e-6;
    if (t_->slots.size() <= slot) t_->slots.resize(slot + 1);
    t_->slots[slot] = t_->now_ms;
  }
  void synchronize(std::size_t slot) override { t_->syncs.push_back(slot); }
  double elapsed_ms(std::size_t from, std::size_t to) const override { return t_->slots.at(to) - t_->slots.at(from); }

 private:
  Timeline* t_;
};

TEST(DeviceClock, PlacesMarksTheirDeviceDistanceBeforeTheSynchronisedAnchor) {
  Timeline t;
  DeviceClock clock(std::make_unique<ScriptedTimer>(&t), [] { return std::int64_t{1'000'000'000}; });
  EXPECT_FALSE(clock.immediate());
  t.now_ms = 10.0;
  auto a = clock.mark();
  t.now_ms = 12.5;
  auto b = clock.mark();
  EXPECT_THROW(clock.host_ns(a), std::logic_error);  // not resolved yet
  t.now_ms = 20.0;  // the anchor: the device reaches it when the host reads 1 s
  clock.resolve();
  EXPECT_EQ(clock.host_ns(a), 1'000'000'000 - 10'000'000);
  EXPECT_EQ(clock.host_ns(b), 1'000'000'000 - 7'500'000);
  clock.resolve();  // nothing new: no second wait
  EXPECT_EQ(t.syncs, std::vector<std::size_t>{2});
  // The next batch reuses the slots and needs its own resolve.
  t.now_ms = 30.0;
  EXPECT_EQ(clock.mark(), 0);
  EXPECT_THROW(clock.host_ns(0), std::logic_error);
  t.now_ms = 31.0;
  clock.resolve();
  EXPECT_EQ(clock.host_ns(0), 1'000'000'000 - 1'000'000);
  EXPECT_EQ(t.syncs, (std::vector<std::size_t>{2, 1}));
}

TEST(DeviceClock, HostClockMarksAreHostTimes) {
  HostClock clock;
  EXPECT_TRUE(clock.immediate());
  std::int64_t before = steady_now_ns();
  auto m = clock.mark();
  EXPECT_GE(clock.host_ns(m), before);
  EXPECT_LE(clock.host_ns(m), steady_now_ns());
}

class FakeMeter final : public DeviceMemory {
 public:
  std::int64_t live_ = 0, peak_ = 0;
  int resets = 0;
  std::int64_t live() const override { return live_; }
  std::int64_t peak() const override { return peak_; }
  void reset_peak() override {
    peak_ = live_;
    ++resets;
  }
  std::string source() const override { return "fake"; }
};

TEST(DeviceMemorySeam, TheBudgetIsCheckedAgainstTheStagesMeterAndNamesTheStage) {
  FakeMeter meter;
  StageMemory m(3, 1000, meter);
  meter.live_ = meter.peak_ = 100;
  m.set_baseline(meter.live());
  meter.peak_ = 100 + 900;
  m.check("forward");
  EXPECT_EQ(m.peak_bytes(), 900);
  EXPECT_EQ(meter.resets, 1);
  meter.live_ = 100 + 700;
  m.set_static(200, 100, 0, 0);
  EXPECT_EQ(m.now().activations, 400);
  meter.peak_ = 100 + 1500;
  try {
    m.check("backward");
    FAIL() << "1500 bytes passed a 1000-byte budget";
  } catch (const MemoryBudgetError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 3: memory budget exceeded during backward"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(m.peak_bytes(), 1500);
}

TEST(DeviceMemorySeam, TheCpuMeterCountsTensorBytes) {
  TensorBytes::install();
  DeviceMemory& cpu = device_memory(c10::Device(c10::kCPU));
  EXPECT_EQ(&cpu, &device_memory(c10::Device(c10::kCPU)));
  std::int64_t before = cpu.live();
  {
    at::Tensor t = at::empty({1000}, at::kFloat);
    EXPECT_EQ(cpu.live() - before, 4000);
    EXPECT_GE(cpu.peak() - before, 4000);
  }
  EXPECT_EQ(cpu.live(), before);
  cpu.reset_peak();
  EXPECT_EQ(cpu.peak(), cpu.live());
}

TEST(DeviceMemorySeam, ACudaDeviceNeedsACudaBuild) {
#ifdef PW_WITH_CUDA
  GTEST_SKIP() << "this build has CUDA";
#else
  EXPECT_THROW(device_memory(c10::Device(c10::kCUDA, 0)), std::invalid_argument);
  EXPECT_THROW(make_event_clock(c10::Device(c10::kCUDA, 0)), std::invalid_argument);
  EXPECT_TRUE(make_event_clock(c10::Device(c10::kCPU))->immediate());
#endif
}

struct Recording final : EventSink {
  const Timeline* timeline = nullptr;
  std::vector<Event> events;
  std::vector<std::size_t> syncs_seen;  // the device's synchronisations when each event arrived
  void on_event(const Event& e) override {
    events.push_back(e);
    syncs_seen.push_back(timeline ? timeline->syncs.size() : 0);
  }
};

// One device, every policy the stage has (keep, recompute, swap), two
// iterations: once with the host clock, once with a device clock whose
// events are resolved at the iteration's end.
TEST(DeviceClock, AStageWithADeviceClockEmitsTheSameEventsOncePerIteration) {
  auto doc = testing::mlp_job(1, 4, "1f1b", {32, 32, 32}, 2);
  doc["training"]["optimizer"] = "sgd";
  JobSpec job = parse_job(doc);
  Plan plan = uniform_partition(4, 1);
  plan.policy = {MemoryPolicy::Keep, MemoryPolicy::Recompute, MemoryPolicy::Swap, MemoryPolicy::Keep};
  auto sched = make_schedule(job.pipeline.schedule, 1, job.pipeline.microbatches, 1);
  ASSERT_EQ(sched->microbatches(), 4);
  TrainData data(job);
  TensorBytes::install();
  LocalStoreDir dir;
  auto store = c10::make_intrusive<c10d::FileStore>(dir.file(), 1);
  auto pg = make_gloo_group(store, 0, 1, {.prefix = "t", .timeout = std::chrono::seconds(60), .threads = 1, .device = nullptr});

  Recording host_events;
  StageExecutor host(job, plan, *sched, 0, pg, data, &host_events);
  std::vector<double> host_losses{host.run_iteration(0), host.run_iteration(1)};

  Timeline t;
  t.follow_host = true;
  const std::int64_t began = steady_now_ns();
  Recording device_events;
  device_events.timeline = &t;
  StageExecutor device(job, plan, *sched, 0, pg, data, &device_events);
  device.use_event_clock(std::make_unique<DeviceClock>(std::make_unique<ScriptedTimer>(&t)));
  std::vector<double> device_losses;
  std::vector<std::size_t> after_iteration;
  for (int it = 0; it < 2; ++it) {
    device_losses.push_back(device.run_iteration(it));
    after_iteration.push_back(device_events.events.size());
  }

  // The same numbers: the losses are read at the iteration's end now.
  EXPECT_EQ(device_losses, host_losses);
  EXPECT_FALSE(std::isnan(host_losses[0]));
  // One synchronisation per iteration, and no event before it.
  EXPECT_EQ(t.syncs.size(), 2u);
  ASSERT_EQ(device_events.events.size(), host_events.events.size());
  for (std::size_t i = 0; i < device_events.events.size(); ++i) {
    const Event &d = device_events.events[i], &h = host_events.events[i];
    EXPECT_EQ(d.kind, h.kind) << i;
    EXPECT_EQ(d.microbatch, h.microbatch) << i;
    EXPECT_EQ(d.chunk, h.chunk) << i;
    EXPECT_EQ(d.bytes, h.bytes) << i;
    EXPECT_EQ(d.first_layer, h.first_layer) << i;
    EXPECT_EQ(d.last_layer, h.last_layer) << i;
    EXPECT_EQ(device_events.syncs_seen[i], i < after_iteration[0] ? 1u : 2u) << i;
    EXPECT_LE(d.start_ns, d.end_ns) << i;
    // The timer stamps on the host clock, so converted times fall within
    // the run (the anchor is read after its stamp: only later, never earlier).
    EXPECT_GE(d.start_ns, began) << i;
    EXPECT_LE(d.end_ns, steady_now_ns()) << i;
  }
  std::set<EventKind> kinds;
  for (auto& e : device_events.events) kinds.insert(e.kind);
  for (EventKind k : {EventKind::Forward, EventKind::Backward, EventKind::Recompute, EventKind::SwapOut,
                      EventKind::SwapIn, EventKind::OptimizerStep})
    EXPECT_TRUE(kinds.count(k)) << "no " << to_string(k) << " event";
}

}  // namespace
}  // namespace pw::rt

#pragma once
// The simulator rig of the closed-form tests (test_simulator_closed_forms,
// test_zero_bubble): identical layers split evenly over a schedule's
// virtual stages, memory without limit, fast links.
#include <memory>

#include "core/model/layer_profile.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"

namespace pw::test {

struct Pipeline {
  ModelProfile profile;
  Plan plan;
  std::unique_ptr<Schedule> schedule;
  DeviceSpec device;
  SimResult run(EventSink* sink = nullptr) {
    SimInput in{&profile, &plan, schedule.get(), device, 1};
    return simulate(in, sink);
  }
};

// `layers_per_stage` copies of `layer` per virtual stage of `kind` on p
// devices with `chunks` chunks each and m microbatches; 1 TiB of memory,
// 100 Gbit/s links to peers and host.
inline Pipeline uniform_pipeline(ScheduleKind kind, int p, int m, int chunks, int layers_per_stage, const LayerProfile& layer) {
  Pipeline s;
  const int v = p * chunks;
  s.profile.layers.assign(static_cast<std::size_t>(v * layers_per_stage), layer);
  s.plan = uniform_partition(v * layers_per_stage, v);
  s.schedule = make_schedule(kind, p, m, chunks);
  s.device.memory_bytes = 1ull << 40;
  s.device.link_gbps = 100;
  s.device.host_link_gbps = 100;
  return s;
}

}  // namespace pw::test

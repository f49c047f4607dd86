#pragma once
// The schedule a run executes on this device, handed down to every part
// for the run's length: one iteration of the job's flush schedule, or the
// async program (PipeDream) that run_async builds and owns. The executor
// keeps no "current schedule", so no part can act on a program whose run
// has ended, and the job's schedule is never swapped out under it.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/events/event.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"

namespace pw::rt::stage_impl {

struct ActiveSchedule {
  const Schedule& schedule;
  const Plan& plan;
  const std::vector<std::vector<std::int64_t>>& shapes;  // layer input shapes (+ model output)
  int device;
  int microbatches;  // per iteration of the job
  // Flush: microbatches numbered within `iteration`. Async: one program
  // numbering them across iterations, from `first_iteration` on.
  bool async;
  std::int64_t iteration;
  std::int64_t first_iteration;

  // The schedule alone says where a virtual stage runs (interleaved and
  // V-shaped placements differ), so the parts ask it, never assume.
  int vstages() const { return schedule.virtual_stages(); }
  int virtual_stage(int chunk) const { return schedule.virtual_stage(device, chunk); }
  int device_of(int vstage) const { return schedule.device_of_virtual_stage(vstage); }
  int chunk_of(int vstage) const { return schedule.chunk_of_virtual_stage(vstage); }
  const StageRange& layers_of(int chunk) const { return plan.stages[virtual_stage(chunk)]; }

  // Unique across the run's iterations: tags and loss records use it.
  std::int64_t global_mb(int mb) const { return async ? mb : iteration * microbatches + mb; }
  // The data a microbatch trains on: (iteration, microbatch within it).
  std::pair<std::int64_t, int> data_position(int mb) const {
    if (!async) return {iteration, mb};
    return {first_iteration + mb / microbatches, mb % microbatches};
  }

  // An event of this device; one on a chunk (the step is on none) names the
  // layers it ran, as the cost model's calibration reads them.
  Event event(EventKind k, int mb, int chunk, std::int64_t bytes = 0) const {
    Event e;
    e.kind = k;
    e.stage = device;
    e.microbatch = mb;
    e.chunk = static_cast<std::int16_t>(chunk);
    e.bytes = bytes;
    if (chunk >= 0 && k != EventKind::OptimizerStep) {
      const auto& r = layers_of(chunk);
      e.first_layer = r.first_layer;
      e.last_layer = r.last_layer;
    }
    return e;
  }
};

}  // namespace pw::rt::stage_impl

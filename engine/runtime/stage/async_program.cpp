// Schedules without a flush (PipeDream async 1F1B) as one program over
// the remaining iterations.
#include "runtime/stage/stage_impl.h"

#include <cmath>
#include <map>

namespace pw::rt {

using namespace stage_impl;

// PipeDream: one program without flushes over all remaining iterations'
// microbatches; every backward is followed by this stage's update. The
// program is this run's: the parts see it through `run`, and it ends here.
void StageExecutor::Impl::run_async(std::int64_t first, std::int64_t iterations,
                                    const std::function<void(std::int64_t, double)>& on_loss) {
  std::int64_t total = (iterations - first) * microbatches;
  if (total <= 0) return;
  // The schedule spans 2 x its microbatches; actions past `total` are skipped alike on every stage.
  const std::unique_ptr<Schedule> program =
      make_schedule(ScheduleKind::PipeDream, devices, static_cast<int>((total + 1) / 2), 1);
  const ActiveSchedule run{*program, plan, shapes, device, microbatches, /*async=*/true, /*iteration=*/0, first};
  // Per iteration, the backwards this device has run: when all are done,
  // its events are converted and its loss (last stage) read, once.
  std::map<std::int64_t, int> backwards;
  std::int64_t n = program->length(device);
  for (std::int64_t i = 0; i < n; ++i) {
    Action a = program->action(device, i);
    if (a.microbatch >= total) continue;
    messaging.prefetch(run, i, total);
    run_action(run, a, first + static_cast<double>(a.microbatch) / microbatches);
    if (a.kind != ActionKind::Backward) continue;
    std::int64_t k = a.microbatch / microbatches;
    if (++backwards[k] < microbatches) continue;
    backwards.erase(k);
    telemetry.flush_events();
    // As before: the mean over the iteration's microbatches, NaN when one
    // of them is (the caller leaves those out; with replicas it averages
    // first, so every replica calls for every iteration, in step).
    std::vector<double> ls = take_losses(k * microbatches, (k + 1) * microbatches);
    double mean = 0;
    int counted = 0;
    for (double l : ls)
      if (!std::isnan(l)) {
        mean += l / microbatches;
        ++counted;
      }
    if (computes_loss()) on_loss(first + k, counted == microbatches ? mean : NAN);
  }
  messaging.prefetch(run, n, total);  // ordered messaging: the sends of the last actions
  messaging.wait_sends();
  messaging.end_program();
  telemetry.flush_events();
}

}  // namespace pw::rt

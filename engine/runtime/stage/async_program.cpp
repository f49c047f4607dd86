// Schedules without a flush (PipeDream async 1F1B) as one program over
// the remaining iterations.
#include "runtime/stage/stage_impl.h"

#include <cmath>
#include <map>

namespace pw::rt {

using namespace stage_impl;

// PipeDream: one program without flushes over all remaining iterations'
// microbatches; every backward is followed by this stage's update.
void StageExecutor::Impl::run_async(std::int64_t first, std::int64_t iterations,
                                    const std::function<void(std::int64_t, double)>& on_loss) {
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
    double l = run_action(a, first + static_cast<double>(a.microbatch) / microbatches);
    if (a.kind == ActionKind::Forward && !std::isnan(l)) {
      std::int64_t it = first + a.microbatch / microbatches;
      auto& acc = losses[it];
      acc.first += l / microbatches;
      if (++acc.second == microbatches) {
        on_loss(it, acc.first);
        losses.erase(it);
      }
    }
  }
  prefetch(n, total);  // ordered messaging: the sends of the last actions
  wait_sends();
}

}  // namespace pw::rt

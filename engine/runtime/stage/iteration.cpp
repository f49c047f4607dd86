// One iteration of a flush schedule: this device's actions in order.
#include "runtime/stage/stage_impl.h"

#include <cmath>

namespace pw::rt {

using namespace stage_impl;

void StageExecutor::Impl::run_action(const ActiveSchedule& run, const Action& a, double progress) {
  switch (a.kind) {
    case ActionKind::Forward:
      forward(run, a.microbatch, a.chunk);
      break;
    case ActionKind::Backward:
      backward(run, a.microbatch, a.chunk);
      break;
    case ActionKind::BackwardInput:
      backward_input(run, a.microbatch, a.chunk);
      break;
    case ActionKind::BackwardWeight:
      backward_weight(run, a.microbatch, a.chunk);
      break;
    case ActionKind::OptimizerStep:
      step(run, progress);
      break;
  }
}

double StageExecutor::Impl::run_iteration(std::int64_t it) {
  const ActiveSchedule run{schedule, plan, shapes, device, microbatches, /*async=*/false, it, /*first_iteration=*/0};
  std::int64_t n = schedule.length(device);
  for (std::int64_t i = 0; i < n; ++i) {
    prefetch(run, i);
    run_action(run, schedule.action(device, i), static_cast<double>(it));
  }
  prefetch(run, n);  // ordered messaging: the sends of the last actions
  wait_sends();
  flush_events();
  // The losses are read here, once: a NaN microbatch loss is left out of
  // the sum as it always was.
  double loss = 0;
  bool last = false;
  for (double l : take_losses(it * microbatches, (it + 1) * microbatches))
    if (!std::isnan(l)) {
      loss += l;
      last = true;
    }
  return last ? loss : NAN;
}

}  // namespace pw::rt

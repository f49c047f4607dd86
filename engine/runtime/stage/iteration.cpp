// One iteration of a flush schedule: this device's actions in order.
#include "runtime/stage/stage_impl.h"

#include <cmath>

namespace pw::rt {

using namespace stage_impl;

void StageExecutor::Impl::run_action(const Action& a, double progress) {
  switch (a.kind) {
    case ActionKind::Forward:
      forward(a.microbatch, a.chunk);
      break;
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
      step(progress);
      break;
  }
}

double StageExecutor::Impl::run_iteration(std::int64_t it) {
  iteration = it;
  std::int64_t n = sched->length(device);
  for (std::int64_t i = 0; i < n; ++i) {
    prefetch(i);
    run_action(sched->action(device, i), static_cast<double>(it));
  }
  prefetch(n);  // ordered messaging: the sends of the last actions
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

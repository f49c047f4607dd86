// One iteration of a flush schedule: this device's actions in order.
#include "runtime/stage/stage_impl.h"

#include <cmath>

namespace pw::rt {

using namespace stage_impl;

double StageExecutor::Impl::run_action(const Action& a, double progress) {
  switch (a.kind) {
    case ActionKind::Forward:
      return forward(a.microbatch, a.chunk);
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
  return NAN;
}

double StageExecutor::Impl::run_iteration(std::int64_t it) {
  iteration = it;
  double loss = 0;
  bool last = false;
  std::int64_t n = sched->length(device);
  for (std::int64_t i = 0; i < n; ++i) {
    prefetch(i);
    Action a = sched->action(device, i);
    double l = run_action(a, static_cast<double>(it));
    if (a.kind == ActionKind::Forward && !std::isnan(l)) {
      loss += l;
      last = true;
    }
  }
  prefetch(n);  // ordered messaging: the sends of the last actions
  wait_sends();
  return last ? loss : NAN;
}

}  // namespace pw::rt

// One iteration of a flush schedule: this device's actions in order, and
// the losses they made, read once.
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
    messaging.prefetch(run, i);
    next_action = i + 1 < n ? std::optional<Action>(schedule.action(device, i + 1)) : std::nullopt;
    run_action(run, schedule.action(device, i), static_cast<double>(it));
  }
  next_action.reset();
  messaging.prefetch(run, n);  // ordered messaging: the sends of the last actions
  messaging.wait_sends();
  telemetry.flush_events();
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

std::vector<double> StageExecutor::Impl::take_losses(std::int64_t from, std::int64_t to) {
  std::vector<at::Tensor> mine;
  std::vector<std::pair<std::int64_t, at::Tensor>> rest;
  for (auto& [mb, l] : losses) {
    if (mb >= from && mb < to)
      mine.push_back(l);
    else
      rest.emplace_back(mb, l);
  }
  losses = std::move(rest);
  if (mine.empty()) return {};
  // One copy of all of them: each float widens to the same double that
  // item<double>() gave per microbatch before.
  at::Tensor all = at::stack(mine).to(at::kCPU, at::kDouble).contiguous();
  const double* v = all.data_ptr<double>();
  return {v, v + all.numel()};
}

}  // namespace pw::rt

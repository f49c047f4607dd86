#include "core/replan/replan_trigger.h"

#include <algorithm>
#include <cstdio>

namespace pw {

const char* to_string(ReplanReason r) {
  switch (r) {
    case ReplanReason::Imbalance: return "imbalance";
    case ReplanReason::MemoryPressure: return "memory_pressure";
    case ReplanReason::Manual: return "manual";
  }
  return "?";
}

double ReplanTrigger::imbalance(const std::vector<StageObservation>& stages) {
  if (stages.empty()) return 0;
  double sum = 0, mx = 0;
  for (const auto& s : stages) {
    sum += s.compute_ms;
    mx = std::max(mx, s.compute_ms);
  }
  double mean = sum / stages.size();
  return mean > 0 ? mx / mean - 1 : 0;
}

std::optional<ReplanDecision> ReplanTrigger::observe(int iteration, const std::vector<StageObservation>& stages) {
  if (manual_) {
    manual_ = false;
    return ReplanDecision{ReplanReason::Manual, "rebalance requested"};
  }
  if (iteration - last_replan_ < s_.cooldown_iterations) return std::nullopt;
  char buf[160];
  for (size_t i = 0; i < stages.size(); ++i) {
    const auto& s = stages[i];
    if (s.memory_budget_bytes > 0 && s.peak_memory_bytes >= s_.memory_pressure * s.memory_budget_bytes) {
      std::snprintf(buf, sizeof buf, "stage %zu at %.0f%% of its memory budget", i,
                    100.0 * s.peak_memory_bytes / s.memory_budget_bytes);
      return ReplanDecision{ReplanReason::MemoryPressure, buf};
    }
  }
  double imb = imbalance(stages);
  if (!armed_ && imb > s_.imbalance_threshold) {
    armed_ = true;
    armed_for_ = 0;
  } else if (armed_ && imb < s_.imbalance_release) {
    armed_ = false;
  }
  if (!armed_) return std::nullopt;
  if (++armed_for_ < s_.sustain_iterations) return std::nullopt;
  size_t slowest = 0;
  for (size_t i = 1; i < stages.size(); ++i)
    if (stages[i].compute_ms > stages[slowest].compute_ms) slowest = i;
  std::snprintf(buf, sizeof buf, "stage %zu is %.2fx the mean stage time", slowest, 1 + imb);
  return ReplanDecision{ReplanReason::Imbalance, buf};
}

void ReplanTrigger::replanned(int iteration) {
  last_replan_ = iteration;
  armed_ = false;
  armed_for_ = 0;
}

std::vector<double> observed_slowdown(const std::vector<double>& predicted_ms,
                                      const std::vector<StageObservation>& observed) {
  std::vector<double> f(observed.size(), 1.0);
  for (size_t i = 0; i < observed.size() && i < predicted_ms.size(); ++i)
    if (predicted_ms[i] > 0 && observed[i].compute_ms > 0) f[i] = observed[i].compute_ms / predicted_ms[i];
  return f;
}

}  // namespace pw

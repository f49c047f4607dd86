#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/replan_settings.h"

namespace pw {

// What one stage looked like over the last iteration.
struct StageObservation {
  double compute_ms = 0;  // measured forward + backward (+ recompute) per microbatch
  std::uint64_t peak_memory_bytes = 0;
  std::uint64_t memory_budget_bytes = 0;
};

enum class ReplanReason { Imbalance, MemoryPressure, Manual };
const char* to_string(ReplanReason r);

struct ReplanDecision {
  ReplanReason reason;
  std::string detail;  // e.g. "stage 2 is 1.9x the mean stage time"
};

class ReplanTrigger {
 public:
  explicit ReplanTrigger(ReplanSettings settings = {}) : s_(settings) {}

  // Feed one iteration's observations; returns a decision when a replan is due.
  std::optional<ReplanDecision> observe(int iteration, const std::vector<StageObservation>& stages);
  // A user asked to rebalance now (control message): fires on the next observe.
  void request_manual() { manual_ = true; }
  // The coordinator re-planned at `iteration` (applied or not): start the cooldown.
  void replanned(int iteration);
  // Whether a candidate plan is worth migrating to.
  bool worth_it(double current_throughput, double new_throughput) const {
    return new_throughput > current_throughput * (1 + s_.min_gain);
  }

  static double imbalance(const std::vector<StageObservation>& stages);
  const ReplanSettings& settings() const { return s_; }

 private:
  ReplanSettings s_;
  bool manual_ = false;
  bool armed_ = false;
  int armed_for_ = 0;
  int last_replan_ = -1000000;
};

// Per device slowdown factors implied by measurements: observed compute per
// microbatch over the cost model's prediction for the layers each stage
// holds. This is what the planner needs to place fewer layers on a slow
// device (PlanRequest::slowdown).
std::vector<double> observed_slowdown(const std::vector<double>& predicted_ms,
                                      const std::vector<StageObservation>& observed);

}  // namespace pw

#pragma once

namespace pw {

// When to re-plan a running pipeline (VPipe's online loop). Thresholds are
// job settings; the hysteresis keeps a plan from oscillating between two
// near-equal partitions.
struct ReplanSettings {
  double imbalance_threshold = 0.15;  // slowest stage / mean stage - 1 that arms the trigger
  double imbalance_release = 0.05;    // below this the trigger disarms (hysteresis)
  int sustain_iterations = 2;         // consecutive armed iterations before firing
  double memory_pressure = 0.95;      // fraction of the budget that fires at once
  int cooldown_iterations = 5;        // after a replan, observe this long before another
  double min_gain = 0.05;             // predicted throughput gain a new plan must bring
};

}  // namespace pw

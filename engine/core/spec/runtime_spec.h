#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/layout/plan_layout.h"
#include "core/spec/replan_settings.h"

namespace pw {

class JsonFields;

// A migration fixed in the job (tests, demos): at `iteration`, switch to
// these stage ranges and/or these per-layer memory policies (empty: keep
// the current ones).
struct ScriptedMigration {
  std::int64_t iteration = 0;
  std::vector<StageRange> stages;
  std::vector<MemoryPolicy> policy;
};

// The job's "runtime" section (all optional), read by the engine's live
// migration (engine/runtime/migration):
//   "slowdown": [1, 3]            per-device compute slowdown factor (provoked imbalance)
//   "slowdown_from": 5            iteration from which it applies (default 0)
//   "replan": {"enabled": true, "planner": "vpipe", "imbalance_threshold": .15, "imbalance_release": .05,
//              "sustain_iterations": 2, "cooldown_iterations": 5, "min_gain": .05, "memory_pressure": .95,
//              "measure_iterations": 3, "rebalance_at": 10}
//   "migrate": [{"iteration": 3, "stages": [[0, 0], [1, 3]]},
//               {"iteration": 5, "policy": ["recompute", "keep", "swap", "keep"]}]
//   "fail_in_migration": 1        test hook: that rank dies after sending its layers
struct RuntimeSpec {
  bool present = false;  // the job has a runtime section: the migration agent runs
  std::vector<double> slowdown;
  std::int64_t slowdown_from = 0;
  bool replan = false;
  std::string planner = "vpipe";
  ReplanSettings trigger;
  int measure_iterations = 3;
  std::int64_t rebalance_at = -1;  // replan.rebalance_at: a manual request after this iteration (demos, tests)
  std::vector<ScriptedMigration> migrate;
  int fail_in_migration = -1;
};

// Parses a present `runtime` object; `stages` is pipeline.stages. Throws
// SpecError naming runtime.<field>.
RuntimeSpec parse_runtime(JsonFields f, int stages);

// What only the model's layer count can tell (scripted migrations list one
// policy per layer and tile the layers): checked once the profile is known
// (prepare_job, and the engine before it runs).
void check_runtime_layers(const RuntimeSpec& r, int layers);

}  // namespace pw

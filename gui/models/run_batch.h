#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/events/run_records.h"
#include "core/plan/plan_version.h"

namespace pw::gui {

struct RunInfo {
  std::string name;
  std::string source;  // "simulated", "recorded: <file>", "live: <endpoint>"
  int stages = 0;
  int microbatch_size = 1;
  int microbatches = 1;
  std::vector<std::int64_t> memory_budget;  // per stage
  // Data parallelism: replicas of the pipeline the run trained with (its
  // plan's), those whose events the source holds (a simulation records
  // one), and the one whose pipeline the model holds.
  int replicas = 1;
  int recorded_replicas = 1;
  int replica = 0;
};

// What a RunSource publishes at once; every part may be empty. The
// studio keeps no log view: a source leaves `logs` empty.
struct RunBatch : RunRecordBatch {
  std::optional<RunInfo> info;
  std::vector<PlanVersion> plans;
  bool finished = false;  // the run ended (engine stopped, file fully read)
  // The run's state as its producer reports it (live status, recorded
  // status, the launcher seeing its engine exit), with the reason if any.
  std::optional<RunStatus> status;
  std::string status_reason;
  // A live run paused (true) or running again (false), as its engine reports.
  std::optional<bool> paused;

  std::size_t size() const { return record_count() + plans.size(); }
};

// A memory sample's breakdown (unknown parts count as 0), in the order
// parameters, optimizer, stashed weights, activations, swapped out,
// prefetched.
constexpr int kMemoryCategoryCount = 6;
std::array<std::int64_t, kMemoryCategoryCount> memory_categories(const MemorySample& m);
const char* memory_category_name(int category);
bool has_memory_breakdown(const MemorySample& m);

}  // namespace pw::gui

#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/events/run_records.h"
#include "core/plan/plan.h"

namespace pw::gui {

// A plan in force from t_ns on (version 1 is the initial plan).
struct PlanVersion {
  int version = 1;
  std::int64_t t_ns = 0;
  std::string reason;
  Plan plan;
};

struct RunInfo {
  std::string name;
  std::string source;  // "simulated", "recorded: <file>", "live: <endpoint>"
  int stages = 0;
  int microbatch_size = 1;
  int microbatches = 1;
  std::vector<std::int64_t> memory_budget;  // per stage
};

// What a RunSource publishes at once; every part may be empty.
struct RunBatch {
  std::optional<RunInfo> info;
  std::vector<Event> events;
  std::vector<MemorySample> memory;
  std::vector<ThroughputSample> throughput;
  std::vector<PlanVersion> plans;
  std::vector<Migration> migrations;
  std::vector<SubnetState> subnet_states;
  std::vector<SubnetEdge> subnet_edges;
  bool finished = false;  // the run ended (engine stopped, file fully read)
  // The run's state as its producer reports it (live status, recorded
  // status, the launcher seeing its engine exit), with the reason if any.
  std::optional<RunStatus> status;
  std::string status_reason;
  // A live run paused (true) or running again (false), as its engine reports.
  std::optional<bool> paused;

  std::size_t size() const {
    return events.size() + memory.size() + throughput.size() + plans.size() + migrations.size() +
           subnet_states.size() + subnet_edges.size();
  }
};

// A memory sample's breakdown (unknown parts count as 0), in the order
// parameters, optimizer, stashed weights, activations, swapped out,
// prefetched.
constexpr int kMemoryCategoryCount = 6;
std::array<std::int64_t, kMemoryCategoryCount> memory_categories(const MemorySample& m);
const char* memory_category_name(int category);
bool has_memory_breakdown(const MemorySample& m);

}  // namespace pw::gui

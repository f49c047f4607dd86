#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/nas/csp_policy.h"
#include "core/nas/eviction.h"
#include "core/nas/search_space.h"
#include "core/nas/subnet_observer.h"
#include "core/nas/supernet_drivers.h"
#include "core/spec/device.h"

namespace pw::nas {

enum class CacheModel { Predictive, Planned };
const char* to_string(CacheModel m);

struct SupernetSimInput {
  const SearchSpace* space = nullptr;
  const std::vector<Subnet>* sequence = nullptr;
  std::vector<StageSlots> stages;
  DeviceSpec device;
  SupernetMode mode = SupernetMode::Csp;
  int microbatches = 1;       // a subnet's batch in microbatches (costs are per microbatch)
  int window = 32;            // CSP lookahead
  double budget_bytes = 0;    // per stage, for candidates; <= 0: everything fits
  int prefetch_depth = 32;    // subnets ahead the prefetcher loads for (CSP reorders: look far)
  // Candidate eviction of the modes that know the subnet sequence (CSP,
  // sequential, VPipe); GPipe and PipeDream load on demand and evict LRU.
  Eviction eviction = Eviction::Belady;
  // How loads are decided. Predictive: prefetch for the subnets the stage's
  // policy predicts next, evict only when room is needed (the simulator's
  // default). Planned: the trainer's device cache, a CachePlan over the
  // sequence order (core/nas/device_cache_plan.h) whose loads do not depend
  // on timing (CSP and sequential only).
  CacheModel cache_model = CacheModel::Predictive;
  bool communication = true;  // activation / gradient transfers between stages
};

// One stage's candidate cache over a run.
struct StageCacheFigures {
  std::uint64_t uses = 0, hits = 0;  // candidate uses by subnets; already resident when the forward could start
  std::uint64_t loads = 0, evictions = 0;
  double load_bytes = 0;
  double stall_ms = 0;  // compute waiting for loads (Planned: from wanting a forward to starting it)
  double hit_rate() const { return uses ? static_cast<double>(hits) / uses : 1.0; }
};

struct SupernetSimResult {
  std::string mode;
  bool reproducible = true;
  int subnets = 0;
  double makespan_ms = 0;
  double subnets_per_s = 0;
  double utilisation = 0;  // compute busy time / (stages x makespan)
  std::vector<double> stage_busy_fraction;
  // Supernet memory: per use of a candidate by a subnet at a stage, was it
  // already resident when the subnet's forward could otherwise start?
  std::uint64_t layer_uses = 0, resident_hits = 0;
  std::string eviction;  // the rule the caches used
  std::string cache_model;
  std::uint64_t loads = 0, evictions = 0;
  double load_gib = 0;
  double load_stall_ms = 0;  // compute waiting for candidates to arrive
  std::vector<std::uint64_t> peak_resident_bytes;
  std::vector<StageCacheFigures> stage_cache;  // the totals above, per stage
  std::uint64_t events = 0;
  std::uint64_t waits = 0;  // CSP wait edges reported
  int max_in_flight = 0;    // subnets admitted but not finished
  double hit_rate() const { return layer_uses ? static_cast<double>(resident_hits) / layer_uses : 1.0; }
};

// Discrete-event execution of a subnet sequence on a pipeline under one
// mode. Per stage a compute stream (forward, backward, then the subnet's
// update of its own layers), a link per direction to its neighbours, and a
// host link per direction for candidate loads and write-backs. Events go
// to `sink` (microbatch = subnet id; OptimizerStep = that subnet's update;
// SwapIn / SwapOut = candidate loads / write-backs, first_layer = choice
// layer); subnet states and CSP wait edges to `observer`. Throws
// std::logic_error if the schedule stops before every subnet finished.
SupernetSimResult simulate_supernet(const SupernetSimInput& in, EventSink* sink = nullptr,
                                    SubnetObserver* observer = nullptr);

}  // namespace pw::nas

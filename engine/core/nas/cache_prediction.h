#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/nas/nas_job.h"

namespace pw::nas {

// What the supernet simulator predicts for a job's device candidate cache,
// per stage: the figures the trainer measures (hits, loads, bytes, load
// stalls), to be recorded next to them.
struct CachePrediction {
  std::string eviction;             // rule the prediction assumed
  std::string cache_model;          // "planned": the trainer's (core/nas/device_cache_plan.h)
  double budget_bytes = 0;          // per stage, for candidates (the job's device_budget_gb)
  std::vector<double> slice_bytes;  // per stage: all its candidates resident
  std::vector<StageCacheFigures> stages;
  StageCacheFigures total() const;
};

// Per stage, the bytes of every candidate as the device cache holds them
// (weights, gradients, optimizer state): "the supernet" a budget is a
// fraction of.
std::vector<double> supernet_slice_bytes(const NasJob& nj);

// Per stage, the bytes left for candidates under the job's budget
// (cache_capacity), and whether the stage needs the cache at all (its slice
// does not fit).
std::vector<std::int64_t> stage_capacities(const NasJob& nj);
std::vector<bool> stage_cache_active(const NasJob& nj);

// Throws SpecError naming search_space.device_budget_gb when some subnet's
// candidates on one stage do not fit that stage's capacity (nothing could
// run it), naming the stage, the subnet and the bytes.
void check_device_budget(const NasJob& nj);

// Simulates the job as it will be trained (its schedule, window,
// microbatches, partition, subnet sequence and device budget, with the
// trainer's planned cache) and returns its cache figures. Uses, hits,
// loads, evictions and bytes are the plan's, which a real run reproduces
// exactly; stalls are the simulation's. Pure: same job, same prediction.
// Only csp and sequential jobs (what the trainer runs).
CachePrediction predict_device_cache(const NasJob& nj);

// One stage's cache figures as recorded (run summaries, the simulator's and
// the trainer's alike): uses, hits, hit_rate, loads, evictions,
// load_bytes, stall_ms.
nlohmann::json to_json(const StageCacheFigures& f);

// A real run's "device_cache" record: the rule, budget and per stage the
// capacity, the slice, what the run measured (null where the stage held its
// whole slice and ran without the cache) and what the simulator predicted.
nlohmann::json device_cache_record(const CachePrediction& predicted, const std::vector<std::int64_t>& capacities,
                                   const std::vector<std::optional<StageCacheFigures>>& measured);

}  // namespace pw::nas

#pragma once
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

// Simulates the job as it will be trained (its schedule, window,
// microbatches, partition, subnet sequence and device budget, with the
// trainer's planned cache) and returns its cache figures. Uses, hits,
// loads, evictions and bytes are the plan's, which a real run reproduces
// exactly; stalls are the simulation's. Pure: same job, same prediction.
// Only csp and sequential jobs (what the trainer runs).
CachePrediction predict_device_cache(const NasJob& nj);

}  // namespace pw::nas

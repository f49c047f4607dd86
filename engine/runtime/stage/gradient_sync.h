#pragma once
// Data parallelism on one stage: its gradients all-reduced over the stage's
// replicas (parallel.data) in buckets, each started as soon as its layers'
// gradients of the iteration exist and all waited on before the optimizer
// step, which then sees the replicas' mean (docs/engine.md, "Data
// parallelism"). The buckets are the cost model's (core/cost/
// gradient_sync.h, sync_buckets: from the last layer back, closed at
// parallel.bucket_mb, PyTorch DDP's rule), so the engine and the simulator
// bucket alike.
//
// PipeDream's async schedule (no flush) updates after every backward: there
// each microbatch's gradient is all-reduced before its update, as
// PipeDream's runtime does for a replicated stage (DDP over the stage's
// replicas, one backward per step), so the replicas keep the same weight
// versions and the same stashes. The buckets start at the step, not layer
// by layer: a stashed version's gradients reach the live weights only
// when the backward ends (WeightStash::fold_gradients).
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/nn/modules/container/sequential.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/spec/job_spec.h"
#include "runtime/device_placement.h"
#include "runtime/stage.h"
#include "runtime/stage/active_schedule.h"
#include "runtime/stage/stage_telemetry.h"

namespace pw::rt::stage_impl {

class ReplicaGradientSync {
 public:
  // The buckets of every virtual stage `device` holds, over the layers
  // `layers` (null where another device owns them).
  ReplicaGradientSync(const JobSpec& job, const Plan& plan, const Schedule& schedule, int device,
               const std::vector<torch::nn::Sequential>& layers, ReplicaSet replicas, const StageDevice& placement,
               StageTelemetry& telemetry);
  ~ReplicaGradientSync();

  // A backward (the fused one, or W of a split one) of `chunk` begins: true
  // when it is the chunk's last of the iteration, whose layers' gradients
  // are then complete one by one (layer_done); always false for the async
  // schedule (its buckets start in finish()).
  bool begins_last_backward(int chunk);
  // Layer `layer`'s gradients of the iteration are complete: every bucket
  // whose layers all are starts its all-reduce now.
  void layer_done(const ActiveSchedule& run, int chunk, int layer);
  // Before the optimizer step: the buckets not started yet start, every one
  // is waited on, and the gradients become the replicas' mean (sum / d).
  // Emits one AllReduce event per bucket.
  void finish(const ActiveSchedule& run);

  int buckets() const { return static_cast<int>(buckets_.size()); }

 private:
  struct Bucket {
    int chunk = 0, first_layer = 0, last_layer = -1;
    std::vector<at::Tensor> params;
    std::int64_t bytes = 0;
    // In flight: the flattened sum, its work, when it started and (set from
    // the transport's thread) when it completed.
    std::vector<at::Tensor> flat;
    c10::intrusive_ptr<c10d::Work> work;
    EventClock::Mark started = 0;
    std::shared_ptr<std::atomic<std::int64_t>> completed_ns;
  };
  void start(const ActiveSchedule& run, Bucket& b);

  ReplicaSet replicas_;
  const StageDevice& placement_;
  StageTelemetry& telemetry_;
  int microbatches_;
  bool per_microbatch_;  // PipeDream's async schedule: a sync before every update
  std::vector<Bucket> buckets_;           // per chunk, in the order they become ready
  std::vector<int> backwards_;            // per chunk: backwards begun this iteration
};

}  // namespace pw::rt::stage_impl

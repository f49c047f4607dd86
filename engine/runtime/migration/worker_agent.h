#pragma once
#include <c10/util/intrusive_ptr.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>

#include "core/events/event.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/spec/job_spec.h"
#include "runtime/migration/settings.h"
#include "runtime/stage.h"
#include "runtime/stage_extension.h"

namespace c10d {
class Store;
}

namespace pw::rt {
class TrainData;
}

namespace pw::rt::migration {

// The worker's side of live migration (docs/migration.md). Between two
// iterations of a flush schedule it: schedules online proposals (rank 0),
// applies a migration due at this iteration (layer state over Gloo p2p,
// a StageExecutor for the new plan, ack, wait for the coordinator's
// commit, swap), and reports per-iteration compute to the coordinator.
// Its event sink measures forward/backward time and applies the provoked
// slowdown. Inactive (a pass-through) when the job has no runtime section.
// With replicas (parallel.data): every replica's agent applies the same
// plan at the same iteration, moving layers among its own pipeline's
// stages (`pg`), and the stage it builds syncs gradients with the same
// replica group (`replicas`), its buckets cut for its new layers; store
// keys are per worker (WORLD rank).
class WorkerAgent final : public StageExtension {
 public:
  WorkerAgent(const JobSpec& job, const Plan& plan, const Schedule& schedule, int rank,
              c10::intrusive_ptr<c10d::Store> store, StageExecutor::PG pg, TrainData& data, EventSink* log,
              ReplicaSet replicas = {});
  ~WorkerAgent() override;
  EventSink* sink() override;
  void before_iteration(std::int64_t it, StageExecutor& stage) override;
  void after_iteration(std::int64_t it, StageExecutor& stage) override;
  // The plan this stage runs now (the last committed migration's).
  const Plan* plan() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::rt::migration

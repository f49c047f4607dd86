#pragma once
#include <c10/util/intrusive_ptr.h>

#include <cstdint>

#include "core/events/event.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/spec/job_spec.h"
#include "runtime/stage.h"

namespace c10d {
class Store;
}

namespace pw::rt {

class TrainData;

// What a worker offers the features that take part in its stage.
struct StageContext {
  const JobSpec& job;
  const Plan& plan;
  const Schedule& schedule;
  int rank;
  c10::intrusive_ptr<c10d::Store> store;
  StageExecutor::PG pg;
  TrainData& data;
  // With parallel.data > 1: this stage's replicas (a StageExecutor an
  // extension builds must sync its gradients with them too); `rank` above
  // is the stage, the same on every replica.
  ReplicaSet replicas = {};
};

// A feature that takes part in a worker's run (live migration) without the
// worker knowing it: the worker calls every registered extension at these
// points, in registration order (run_extensions.h).
class StageExtension {
 public:
  virtual ~StageExtension() = default;
  // The sink the stage's events go to when this extension watches them
  // (it passes them on to the sink it was made with); null: it does not.
  virtual EventSink* sink() { return nullptr; }
  // Between two iterations of a flush schedule; the extension may replace
  // the stage (StageExecutor::swap) in before_iteration.
  virtual void before_iteration(std::int64_t iteration, StageExecutor& stage) {}
  virtual void after_iteration(std::int64_t iteration, StageExecutor& stage) {}
  // The partition the stage runs now where this extension changed it (a
  // checkpoint records it); null: unchanged.
  virtual const Plan* plan() const { return nullptr; }
};

}  // namespace pw::rt

#pragma once
#include <c10/util/intrusive_ptr.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/events/run_records.h"
#include "core/job/job_plan.h"
#include "core/replan/migration_plan.h"
#include "core/replan/replan_trigger.h"
#include "runtime/migration/settings.h"

namespace c10d {
class Store;
}

namespace pw::rt {
class RunObserver;
}

namespace pw::rt::migration {

// One replan that was applied: what moved, the stall, the gains.
struct MigrationEvent {
  int version = 0;
  std::string reason;  // scripted, manual, imbalance, memory_pressure
  std::string detail;
  std::int64_t iteration = -1;  // the first iteration run with the new plan
  Plan from, to;
  std::vector<LayerMove> moves;
  std::int64_t bytes = 0;       // serialized state that travelled
  double stall_ms = 0;          // last worker to reach the boundary -> last worker switched
  double prepare_ms = 0;        // slowest worker: transfer + build, before the ack
  double iteration_ms_before = 0;  // measured, mean of the iterations just before
  double iteration_ms_after = NAN;  // measured after (filled measure_iterations later)
  double predicted_gain = NAN;      // planner: new / current throughput - 1 (online replans)
  double measured_gain = NAN;
  std::int64_t start_ns = 0, end_ns = 0;
  std::vector<double> slowdown;  // what the planner was told
  bool reported = false;  // passed to the observer (once the measured gain is known, or at the end)
  nlohmann::json to_json() const;
  std::vector<Migration> records() const;  // one per moved layer, for recorders
};

// The coordinator's side of online replanning (docs/migration.md):
// publishes scripted migrations, reads per-iteration stage measurements,
// feeds ReplanTrigger, re-plans incrementally with the measured slowdown,
// proposes the new plan if it is worth it, and runs the two-phase commit.
class Controller {
 public:
  Controller(const PreparedJob& job, c10::intrusive_ptr<c10d::Store> store, RunObserver* observer, bool quiet = false);
  bool enabled() const { return settings_.present; }
  // Before the workers start.
  void publish();
  // A resumed run: the first iteration the workers will report.
  void start_at(std::int64_t iteration) { next_stat_ = iteration; }
  // Called every round of the coordinator's loop.
  void poll();
  // True while the coordinator should poll fast (a switch is being agreed).
  bool busy() const;
  // Appended to a failure message: names an in-flight migration, if any.
  // Reads the iterations the workers reported since the last poll first:
  // the coordinator polls every 50 ms while short iterations run ahead, so
  // a worker can die in a migration the controller has not reached yet.
  std::string failure_context();
  const Plan& plan() const { return plan_; }
  const std::vector<MigrationEvent>& events() const { return events_; }
  // Per iteration: {iteration, iter_ms, compute_ms[]}.
  const nlohmann::json& timeline() const { return timeline_; }
  nlohmann::json report() const;
  // At the end of the run: passes events still waiting for their measured gain.
  void finish();

 private:
  struct Pending {
    int version;
    Plan plan;
    std::string reason, detail;
    double predicted_gain = NAN;
    std::vector<double> slowdown;
    bool committed = false;
    std::int64_t iteration = -1;
  };
  void read_stats();
  void replan(std::int64_t it, const std::vector<StageObservation>& obs, const ReplanDecision& d);
  void advance(Pending& p);
  void report_event(MigrationEvent& e);

  const PreparedJob& job_;
  c10::intrusive_ptr<c10d::Store> store_;
  RunObserver* obs_;
  bool quiet_;
  Settings settings_;
  ReplanTrigger trigger_;
  Plan plan_;  // in force (after the last commit)
  int world_;     // the pipeline's stages
  int replicas_;  // parallel.data: each stage's workers (WORLD = world_ x replicas_)
  int version_ = 0;
  std::int64_t proposals_ = 0;
  std::int64_t rebalance_seen_ = 0;
  std::int64_t next_stat_ = 0;
  std::vector<Pending> pending_;
  std::vector<MigrationEvent> events_;
  std::vector<double> iter_ms_;  // by iteration (NaN unknown)
  nlohmann::json timeline_ = nlohmann::json::array();
};

}  // namespace pw::rt::migration

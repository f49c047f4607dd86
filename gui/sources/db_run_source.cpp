#include "gui/sources/db_run_source.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "core/spec/job_spec.h"
#include "core/plan/plan.h"
#include "db/run_reader.h"
#include "gui/models/explain_model.h"

namespace pw::gui {

PredictionSource recorded_prediction(const std::string& path) {
  db::RunReader r(path);
  std::vector<PlanAt> plans;
  for (const auto& p : r.plans()) plans.push_back({p.t_ns, p.version, plan_from_json(p.plan)});
  std::string why;
  auto in = prediction_inputs(r.job(), r.profile(), std::move(plans), &why);
  if (!in) return {nullptr, QString::fromStdString(why)};
  return {std::make_shared<const PredictionInputs>(std::move(*in)), {}};
}

DbRunSource::DbRunSource(std::string path, int wait_ms, QObject* parent, int replica)
    : RunSource(parent), path_(std::move(path)), wait_ms_(wait_ms), replica_(replica) {}

DbRunSource::~DbRunSource() { stop(); }

QString DbRunSource::description() const { return QStringLiteral("recorded: %1").arg(QString::fromStdString(path_)); }

void DbRunSource::run() {
  for (int waited = 0; wait_ms_ > 0 && !std::filesystem::exists(path_); waited += 50) {
    if (stopRequested()) return;
    if (waited >= wait_ms_)
      throw std::runtime_error("no run database appeared at " + path_ + " within " + std::to_string(wait_ms_ / 1000) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  db::RunReader reader(path_);  // throws DbError with the reason: reported by RunSource
  RunBatch head;
  RunInfo info;
  info.name = reader.run().name;
  info.source = "recorded: " + path_;
  info.stages = reader.run().stages;
  info.recorded_replicas = reader.replicas();
  if (replica_ < 0 || replica_ >= info.recorded_replicas)
    throw std::runtime_error("replica " + std::to_string(replica_) + ": " + path_ + " recorded " +
                             std::to_string(info.recorded_replicas) + " replica(s)");
  info.replica = replica_;
  info.replicas = info.recorded_replicas;
  auto job = reader.job();
  if (!job.is_null()) {
    try {
      JobSpec spec = parse_job(job);
      info.microbatch_size = spec.training.microbatch_size;
      info.microbatches = spec.pipeline.microbatches;
      info.memory_budget.assign(info.stages, static_cast<std::int64_t>(spec.cluster.device.memory_bytes));
    } catch (const std::exception&) {
      // An older or foreign job document: the run still opens, without budgets.
    }
  }
  head.info = info;
  for (const auto& p : reader.plans()) {
    try {
      head.plans.push_back({p.version, p.t_ns, p.reason, plan_from_json(p.plan)});
    } catch (const std::exception&) {
    }
  }
  // The plan in force last says how many replicas trained (a simulation
  // records one of them).
  if (!head.plans.empty()) head.info->replicas = std::max(head.info->recorded_replicas, head.plans.back().plan.data_parallel);
  publish(std::move(head));

  constexpr std::size_t kBatch = 1 << 16;
  std::int64_t after = 0;
  bool first_pass = true;
  for (;;) {
    // Everything recorded so far, in batches the GUI can take per tick.
    for (;;) {
      if (stopRequested()) return;
      RunBatch b;
      b.events = reader.events_after(after, kBatch);
      if (b.events.empty()) break;
      // One pipeline: the replicas share stage numbers (a file still being
      // written may show more replicas than it had when it was opened).
      b.events.erase(std::remove_if(b.events.begin(), b.events.end(), [&](const Event& e) { return e.replica != replica_; }),
                       b.events.end());
      if (!b.events.empty()) publish(std::move(b));
    }
    if (first_pass) {
      RunBatch rest;
      reader.for_each_memory([&](const MemorySample& m) {
        if (m.replica != replica_) return;  // the shown replica's pipeline, as its events
        rest.memory.push_back(m);
        if (rest.memory.size() >= kBatch) {
          publish(std::move(rest));
          rest = RunBatch();
        }
      });
      rest.throughput = reader.throughput();
      rest.migrations = reader.migrations();
      rest.subnet_states = reader.subnet_states();
      rest.subnet_edges = reader.subnet_edges();
      publish(std::move(rest));
      first_pass = false;
    }
    reader.refresh();
    if (reader.run().status != RunStatus::Running) break;
    for (int i = 0; i < 20 && !stopRequested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  RunBatch end;
  end.finished = true;
  if (!stopRequested()) {
    end.status = reader.run().status;
    if (end.status == RunStatus::Running) end.status.reset();
  }
  publish(std::move(end));
}

}  // namespace pw::gui

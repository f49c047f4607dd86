#include "cli/runtime/run_recording.h"

#include "core/events/clock.h"

#include <chrono>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "core/events/run_records.h"
#include "core/model/profile_io.h"
#ifdef PW_HAVE_DB
#include "db/run_writer.h"
#endif
#ifdef PW_HAVE_IPC
#include "ipc/control.h"
#include "ipc/curve.h"
#include "ipc/endpoints.h"
#include "ipc/publisher.h"
#endif

namespace pw::cli {
namespace {

class RunRecording final : public rt::RunObserver {
 public:
  RunRecording(const RunRecordingOptions& o, rt::RunObserver* next) : opt_(o), next_(next) {
#ifndef PW_HAVE_DB
    if (!o.db_path.empty()) throw std::runtime_error("--db: this build has no SQLite recorder (pw_db)");
#endif
#ifndef PW_HAVE_IPC
    if (!o.listen.empty()) throw std::runtime_error("--listen: this build has no telemetry (pw_ipc)");
#endif
  }

  void on_start(const PreparedJob& p, int start) override {
    run_id_ = new_run_id();
#ifdef PW_HAVE_DB
    if (!opt_.db_path.empty()) {
      db::RunInfo info;
      info.run_id = run_id_;
      info.name = p.job.name;
      info.source = "run";
      info.stages = p.job.pipeline.stages;
      db::RunWriterOptions wo;
      wo.overwrite = opt_.overwrite;
      db_ = std::make_unique<db::RunWriter>(opt_.db_path, info, wo);
      db_->job(p.job.raw);
      db_->profile(profile_to_json(p.profile));
      db_->plan(1, 0, "initial", to_json(p.plan));
    }
#endif
#ifdef PW_HAVE_IPC
    if (!opt_.listen.empty()) {
      std::optional<ipc::CurveServer> curve;
      if (!opt_.curve_dir.empty()) curve = ipc::curve_server_from_dir(opt_.curve_dir);
      ipc::PublisherOptions po;
      po.endpoint = opt_.listen;
      po.allow_remote = opt_.allow_remote;
      po.curve = curve;
      pub_ = std::make_unique<ipc::Publisher>(run_id_, po);
      pub_->set_run_info(p.job.name, p.job.pipeline.stages, "run", opt_.db_path);
      pub_->status(RunStatus::Running);
      pub_->plan(1, 0, "initial", to_json(p.plan));
      std::string control;
      if (opt_.commands) {
        ipc::ControlServerOptions co;
        // Control binds on the telemetry host, ephemeral port; clients learn it from heartbeats.
        co.endpoint = pub_->endpoint().substr(0, pub_->endpoint().rfind(':')) + ":*";
        co.allow_remote = opt_.allow_remote;
        co.curve = curve;
        ctl_ = std::make_unique<ipc::ControlServer>([this](const ipc::pb::ControlRequest& r) { return handle(r); },
                                                    pub_.get(), co);
        pub_->set_control_endpoint(ctl_->endpoint());
        control = ctl_->endpoint();
      }
      std::cerr << "telemetry " << pub_->endpoint() << (control.empty() ? "" : "  control " + control) << std::endl;
#ifdef PW_HAVE_DB
      if (db_) {
        db_->endpoint("telemetry", pub_->endpoint());
        if (!control.empty()) db_->endpoint("control", control);
      }
#endif
    }
#endif
    if (next_) next_->on_start(p, start);
  }

  void on_iteration(std::int64_t it, double loss, double sps, double eta) override {
    ThroughputSample t;
    // The workers' clock (steady, absolute), so samples line up with events.
    t.t_ns = steady_now_ns();
    t.iteration = it;
    t.samples_per_s = sps;
    t.iteration_ms = last_ns_ ? (t.t_ns - last_ns_) / 1e6 : 0;
    last_ns_ = t.t_ns;
    losses_.push_back(loss);
#ifdef PW_HAVE_DB
    if (db_) db_->throughput(t);
#endif
#ifdef PW_HAVE_IPC
    if (pub_) pub_->throughput(t);
#endif
    if (next_) next_->on_iteration(it, loss, sps, eta);
  }

  void on_events(const std::vector<Event>& events) override {
#ifdef PW_HAVE_DB
    if (db_)
      for (const auto& e : events) db_->on_event(e);
#endif
#ifdef PW_HAVE_IPC
    if (pub_)
      for (const auto& e : events) pub_->on_event(e);
#endif
    if (next_) next_->on_events(events);
  }

  void on_migration(const std::vector<Migration>& moves, const nlohmann::json& event) override {
#ifdef PW_HAVE_DB
    if (db_)
      for (const auto& m : moves) db_->migration(m);
#endif
#ifdef PW_HAVE_IPC
    if (pub_)
      for (const auto& m : moves) pub_->migration(m);
#endif
    if (next_) next_->on_migration(moves, event);
  }

  void on_paused(bool paused) override {
#ifdef PW_HAVE_IPC
    if (pub_) pub_->paused(paused);
#endif
    log(LogLevel::Info, paused ? "paused: every stage stopped at the same iteration" : "resumed");
    if (next_) next_->on_paused(paused);
  }

  void on_checkpoint(std::int64_t iteration) override {
    log(LogLevel::Info, "checkpoint complete at iteration " + std::to_string(iteration));
    if (next_) next_->on_checkpoint(iteration);
  }

  void on_notice(const std::string& message) override {
    log(LogLevel::Warning, message);
    if (next_) next_->on_notice(message);
  }

  void on_finish(const rt::RunResult& r) override {
    // 130: the coordinator was interrupted (SIGINT/SIGTERM), not failed.
    RunStatus status = r.exit_code == 130 ? RunStatus::Interrupted
                       : r.exit_code != 0 ? RunStatus::Failed
                       : r.stopped        ? RunStatus::Stopped
                                          : RunStatus::Finished;
    nlohmann::json summary{{"losses", r.losses},
                           {"samples_per_s", r.samples_per_s},
                           {"iteration_ms", r.iteration_ms},
                           {"stages", r.stages},
                           {"exit_code", r.exit_code}};
    if (r.accuracy >= 0) summary["accuracy"] = r.accuracy;
#ifdef PW_HAVE_DB
    if (db_) {
      db_->summary(summary);
      db_->finish(status, r.error);
    }
#endif
#ifdef PW_HAVE_IPC
    if (pub_) {
      pub_->status(status, r.error);
      pub_->flush();
    }
#endif
#ifdef PW_HAVE_IPC
    ctl_.reset();  // before the publisher it reads snapshots from
#endif
    if (next_) next_->on_finish(r);
  }

 private:
  void log(LogLevel level, const std::string& message) {
    LogRecord l;
    l.t_ns = steady_now_ns();
    l.level = level;
    l.source = "coordinator";
    l.message = message;
#ifdef PW_HAVE_DB
    if (db_) db_->log(l);
#endif
#ifdef PW_HAVE_IPC
    if (pub_) pub_->log(l);
#endif
  }

#ifdef PW_HAVE_IPC
  // On the control server's thread: the coordinator takes posted commands
  // at its next poll; the reply says what was accepted.
  ipc::pb::ControlReply handle(const ipc::pb::ControlRequest& req) {
    namespace pb = ipc::pb;
    using R = pb::ControlRequest;
    auto can = opt_.commands->abilities();
    std::lock_guard lk(mu_);
    auto flush_needed = [&]() -> std::optional<pb::ControlReply> {
      if (can.flushes) return std::nullopt;
      return ipc::error_reply(pb::UNSUPPORTED, "the pipedream schedule has no flush to pause, stop or checkpoint at");
    };
    switch (req.command_case()) {
      case R::kPause:
        if (auto e = flush_needed()) return *e;
        if (paused_) return ipc::error_reply(pb::WRONG_STATE, "already paused");
        paused_ = true;
        opt_.commands->post(rt::RunCommand::Pause);
        break;
      case R::kResume:
        if (!paused_) return ipc::error_reply(pb::WRONG_STATE, "not paused");
        paused_ = false;
        opt_.commands->post(rt::RunCommand::Resume);
        break;
      case R::kStop:
        if (auto e = flush_needed()) return *e;
        opt_.commands->post(rt::RunCommand::Stop);
        break;
      case R::kCheckpoint:
        if (auto e = flush_needed()) return *e;
        if (!can.checkpoints) return ipc::error_reply(pb::UNSUPPORTED, "this run has no run directory");
        opt_.commands->post(rt::RunCommand::Checkpoint);
        break;
      case R::kRebalance:
        if (!can.rebalances)
          return ipc::error_reply(pb::UNSUPPORTED, "online replanning is off for this job (runtime.replan)");
        opt_.commands->post(rt::RunCommand::Rebalance);
        break;
      case R::kSet:
        return ipc::error_reply(pb::INVALID, "setting \"" + req.set().key() + "\" cannot change during a run");
      case R::kQueryStatus: break;
      default: return ipc::error_reply(pb::UNSUPPORTED, "unsupported command");
    }
    pb::ControlReply reply;
    *reply.mutable_status() = pub_->snapshot().status();
    return reply;
  }
  std::mutex mu_;
  bool paused_ = false;  // as requested (the stages pause at their next agreed iteration)
#endif

  RunRecordingOptions opt_;
  rt::RunObserver* next_;
  std::string run_id_;
  std::int64_t last_ns_ = 0;
  std::vector<double> losses_;
#ifdef PW_HAVE_DB
  std::unique_ptr<db::RunWriter> db_;
#endif
#ifdef PW_HAVE_IPC
  std::unique_ptr<ipc::Publisher> pub_;
  std::unique_ptr<ipc::ControlServer> ctl_;  // after pub_: destroyed first
#endif
};
}  // namespace

std::unique_ptr<rt::RunObserver> make_run_recording(const RunRecordingOptions& options, rt::RunObserver* next) {
  return std::make_unique<RunRecording>(options, next);
}

}  // namespace pw::cli

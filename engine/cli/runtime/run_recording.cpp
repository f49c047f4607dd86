#include "cli/runtime/run_recording.h"

#include "core/events/clock.h"

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "core/events/run_records.h"
#include "core/model/profile_io.h"
#ifdef PW_HAVE_IPC
#include "ipc/control.h"
#endif

namespace pw::cli {
namespace {

class RunRecording final : public rt::RunObserver {
 public:
  RunRecording(const RunRecordingOptions& o, rt::RunObserver* next) : opt_(o), next_(next) {}

  void on_start(const PreparedJob& p, int start) override {
    out_ = std::make_unique<RunOutputs>(opt_.outputs,
                                        RunOutputs::Run{new_run_id(), p.job.name, "run", p.job.pipeline.stages});
    nlohmann::json profile = profile_to_json(p.profile), plan = to_json(p.plan);
    out_->begin(p.job.raw, &profile, &plan);
#ifdef PW_HAVE_IPC
    if (opt_.commands && out_->publisher())
      out_->set_control_handler(
          [this, pub = out_->publisher()](const ipc::pb::ControlRequest& r) { return handle(r, *pub); });
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
    out_->recorder().throughput(t);
    if (next_) next_->on_iteration(it, loss, sps, eta);
  }

  void on_events(const std::vector<Event>& events) override {
    for (const auto& e : events) out_->recorder().on_event(e);
    if (next_) next_->on_events(events);
  }

  // The workers' memory samples, each with its stage and replica.
  void on_memory(const std::vector<MemorySample>& samples) override {
    for (const auto& m : samples) out_->recorder().memory(m);
    if (next_) next_->on_memory(samples);
  }

  void on_migration(const std::vector<Migration>& moves, const nlohmann::json& event) override {
    for (const auto& m : moves) out_->recorder().migration(m);
    if (next_) next_->on_migration(moves, event);
  }

  void on_paused(bool paused) override {
    out_->recorder().paused(paused);
    out_->log(LogLevel::Info, "coordinator", paused ? "paused: every stage stopped at the same iteration" : "resumed");
    if (next_) next_->on_paused(paused);
  }

  void on_checkpoint(std::int64_t iteration) override {
    out_->log(LogLevel::Info, "coordinator", "checkpoint complete at iteration " + std::to_string(iteration));
    if (next_) next_->on_checkpoint(iteration);
  }

  void on_notice(const std::string& message) override {
    out_->log(LogLevel::Warning, "coordinator", message);
    if (next_) next_->on_notice(message);
  }

  void on_finish(const rt::RunResult& r) override {
    // The coordinator was interrupted (SIGINT/SIGTERM), not failed.
    RunStatus status = r.interrupted_by != 0 ? RunStatus::Interrupted
                       : r.exit_code != 0 ? RunStatus::Failed
                       : r.stopped        ? RunStatus::Stopped
                                          : RunStatus::Finished;
    nlohmann::json summary{{"losses", r.losses},
                           {"samples_per_s", r.samples_per_s},
                           {"iteration_ms", r.iteration_ms},
                           {"stages", r.stages},
                           {"exit_code", r.exit_code}};
    if (r.accuracy >= 0) summary["accuracy"] = r.accuracy;
    // A run that failed before on_start (a bad plan) has no outputs yet.
    std::string lost;
    if (out_) {
      try {
        out_->finish(status, r.error, &summary);
      } catch (const std::exception& e) {
        // The database stopped taking records (disk full): it is marked
        // failed if it still can be, and the run's own error comes first.
        lost = e.what();
      }
      out_.reset();  // control stops before the commands it posts into
    }
    if (next_) next_->on_finish(r);
    if (!lost.empty()) throw std::runtime_error(r.error.empty() ? lost : r.error + "; and the recording: " + lost);
  }

 private:
#ifdef PW_HAVE_IPC
  // On the control server's thread: the coordinator takes posted commands
  // at its next poll; the reply says what was accepted.
  ipc::pb::ControlReply handle(const ipc::pb::ControlRequest& req, const ipc::Publisher& pub) {
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
    *reply.mutable_status() = pub.snapshot().status();
    return reply;
  }
  std::mutex mu_;
  bool paused_ = false;  // as requested (the stages pause at their next agreed iteration)
#endif

  RunRecordingOptions opt_;
  rt::RunObserver* next_;
  std::int64_t last_ns_ = 0;
  std::unique_ptr<RunOutputs> out_;
};
}  // namespace

std::unique_ptr<rt::RunObserver> make_run_recording(const RunRecordingOptions& options, rt::RunObserver* next) {
  return std::make_unique<RunRecording>(options, next);
}

}  // namespace pw::cli

#include "cli/runtime/run_recording.h"

#include "core/events/clock.h"

#include <memory>
#include <optional>
#include <stdexcept>

#include "core/events/run_records.h"
#include "core/model/profile_io.h"
#include "cli/runtime/run_control.h"

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
    if (opt_.commands) control_.emplace(*opt_.commands).serve(*out_);
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
  std::optional<RunControl> control_;  // with commands: the control server's handler

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

#include "runtime/coordinator.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <thread>

#include "core/events/event_json.h"
#include "core/spec/resume_check.h"
#include "core/spec/spec_error.h"
#include "runtime/checked_write.h"
#include "runtime/child_process.h"
#include "runtime/data.h"
#include "runtime/iteration_agreement.h"
#include "runtime/migration/controller.h"  // migration hook
#include "runtime/migration/keys.h"
#include "runtime/protocol.h"
#include "runtime/rendezvous.h"
#include "runtime/torchscript/torchscript_model.h"  // torchscript hook

namespace pw::rt {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

std::vector<std::uint8_t> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string from_bytes(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

pid_t spawn_worker(const std::string& binary, const std::string& store_file, int rank, int world) {
  return spawn_child({binary}, {{"MASTER_ADDR", "127.0.0.1"},
                                {"PW_STORE_FILE", store_file},
                                {"RANK", std::to_string(rank)},
                                {"WORLD_SIZE", std::to_string(world)}});
}

// Follows a stage's event file (JSON lines) as the worker appends to it;
// a line without its newline yet waits for the next poll.
class EventTail {
 public:
  explicit EventTail(std::string file) : file_(std::move(file)) {}
  void poll(std::vector<Event>& out) {
    std::ifstream in(file_, std::ios::binary);
    if (!in) return;
    in.seekg(pos_);
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    pos_ += static_cast<std::streamoff>(chunk.size());
    partial_ += chunk;
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
      if (auto e = event_from_json_line(partial_.substr(start, nl - start))) out.push_back(*e);
    partial_.erase(0, start);
  }

 private:
  std::string file_;
  std::streamoff pos_ = 0;
  std::string partial_;
};


class Coordinator {
 public:
  Coordinator(const RunOptions& o, RunObserver* obs) : opt_(o), obs_(obs) {}

  RunResult run() {
    // Before anything is written: a resume that cannot proceed leaves its
    // directory as it was (SpecError, exit 2, naming the field).
    if (!opt_.resume_dir.empty()) check_resume_compatible(opt_.resume_dir, opt_.job);
    ensure_torchscript_profile(opt_.job, opt_.run_dir);  // torchscript hook: measured, no analytic costs
    PreparedJob prepared = prepare_job(opt_.job, opt_.planner);
    if (opt_.plan) {
      validate_plan(*opt_.plan, prepared.profile.size());
      if (static_cast<int>(opt_.plan->stages.size()) != prepared.schedule->virtual_stages())
        throw std::invalid_argument("the given plan has " + std::to_string(opt_.plan->stages.size()) +
                                    " stages, the job " + std::to_string(prepared.schedule->virtual_stages()));
      prepared.plan = *opt_.plan;
    }
    nlohmann::json resume;
    if (!opt_.resume_dir.empty()) resume = read_resume_point(prepared);
    result_.plan = prepared.plan;
    const JobSpec& job = prepared.job;
    world_ = job.pipeline.stages;
    int threads = opt_.threads_per_worker;
    if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / world_);

    if (opt_.attach) {
      // Workers on other hosts join through MASTER_ADDR:MASTER_PORT.
      c10d::TCPStoreOptions so;
      so.port = static_cast<std::uint16_t>(opt_.port);
      so.isServer = true;
      so.waitWorkers = false;
      so.timeout = std::chrono::seconds(60);
      store_ = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
    } else {
      // Our own workers on this host: nothing needs to listen on the network.
      local_store_ = std::make_unique<LocalStoreDir>();
      auto fs = c10::make_intrusive<c10d::FileStore>(local_store_->file(), -1);
      fs->setTimeout(std::chrono::seconds(60));
      store_ = fs;
    }
    // migration hook: online replanning and live migration (engine/runtime/migration)
    mig_ = std::make_unique<migration::Controller>(prepared, store_, obs_);
    mig_->publish();

    nlohmann::json cfg{{"job", job.raw},
                       {"plan", to_json(prepared.plan)},
                       {"threads", threads},
                       {"iterations", job.training.iterations},
                       {"run_dir", opt_.run_dir},
                       {"checkpoint_every", opt_.checkpoint_every},
                       {"eval", opt_.eval || opt_.job.data.eval}};
    start_it_ = 0;
    if (!resume.is_null()) {
      start_it_ = resume.at("iteration").get<std::int64_t>();
      cfg["start_iteration"] = start_it_;
      cfg["resume_file"] = resume.at("dir").get<std::string>();
    }
    last_checkpoint_ = start_it_;
    if (!opt_.run_dir.empty()) {
      std::filesystem::create_directories(opt_.run_dir);
      write_file_atomically(opt_.run_dir + "/job.json", job.raw.dump(2) + "\n", "job");
      write_file_atomically(opt_.run_dir + "/plan.json", to_json(prepared.plan).dump(2) + "\n", "plan");
    }
    if (opt_.commands) {
      RunCommands::Abilities a;
      a.flushes = prepared.schedule->flushes();
      a.checkpoints = !opt_.run_dir.empty();
      a.rebalances = mig_->enabled();
      opt_.commands->set_abilities(a);
    }
    if (!opt_.run_dir.empty())
      for (int r = 0; r < world_; ++r)
        tails_.emplace_back(opt_.run_dir + "/events/stage" + std::to_string(r) + ".jsonl");
    store_->set(keys::kConfig, to_bytes(cfg.dump()));
    result_.start_iteration = start_it_;
    mig_->start_at(start_it_);  // migration hook
    if (obs_) obs_->on_start(prepared, static_cast<int>(start_it_));

    struct sigaction sa {}, old_int{}, old_term{};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    g_interrupted = 0;

    if (!opt_.attach) {
      std::string bin = opt_.worker_binary.empty() ? default_worker_binary() : opt_.worker_binary;
      if (access(bin.c_str(), X_OK) != 0) throw std::runtime_error("worker executable not found: " + bin);
      for (int r = 0; r < world_; ++r) pids_.push_back(spawn_worker(bin, local_store_->file(), r, world_));
    }
    try {
      follow(job);
      // Also after a failure: the stages' completed checkpoints stay usable.
      if (!opt_.run_dir.empty()) note_checkpoints();
    } catch (const std::exception& e) {
      fail(1, std::string("coordinator: ") + e.what());
    }
    shutdown();
    if (mig_) finish_migration();  // migration hook
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    if (result_.exit_code == 0) collect(job);
    if (obs_) obs_->on_finish(result_);
    return result_;
  }

 private:
  void fail(int code, const std::string& why) {
    if (result_.exit_code == 0) {
      result_.exit_code = code;
      result_.error = why + (mig_ ? mig_->failure_context() : "");  // migration hook
    }
  }

  std::string worker_error(int rank) {
    try {
      if (store_->check({keys::error(rank)})) return from_bytes(store_->get(keys::error(rank)));
    } catch (...) {
    }
    return "";
  }

  // A stage that fails takes its neighbours down with transport errors
  // (Gloo: "Connection closed by peer"), and those may be reported first.
  // Give every worker a moment to report, then blame a stage whose error is
  // not such a consequence.
  static bool is_consequence(const std::string& e) {
    return e.find("Connection closed by peer") != std::string::npos ||
           e.find("Connection reset") != std::string::npos || e.find("gloo/transport") != std::string::npos;
  }
  std::pair<int, std::string> root_cause(int rank, const std::string& err) {
    if (err.empty() || !is_consequence(err)) return {rank, err};
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int r = 0; r < world_; ++r) {
      std::string e = worker_error(r);
      if (!e.empty() && !is_consequence(e)) return {r, e};
    }
    return {rank, err};
  }

  // Polls worker liveness, heartbeats and progress until every worker has
  // reported its result or something fails.
  void follow(const JobSpec& job) {
    std::int64_t iterations = job.training.iterations;
    std::int64_t next = start_it_;
    std::vector<std::int64_t> beats(world_, -1);
    std::vector<double> beat_at(world_, now_s());
    double first_t = -1, last_t = -1;
    std::int64_t first_it = -1;
    double started = now_s();
    std::int64_t polls = 0;
    while (true) {
      if (g_interrupted) return fail(130, "interrupted");
      // A worker process that ended: fine only after it reported a result.
      for (int r = 0; r < static_cast<int>(pids_.size()); ++r) {
        if (pids_[r] <= 0) continue;
        int status = 0;
        if (waitpid(pids_[r], &status, WNOHANG) == pids_[r]) {
          pids_[r] = 0;
          bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
          if (!ok || !store_->check({keys::result(r)})) {
            std::string err = worker_error(r);
            std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                  : "exited with status " + std::to_string(WEXITSTATUS(status));
            auto [cause, cause_err] = root_cause(r, err);
            if (cause != r) return fail(1, "stage " + std::to_string(cause) + ": " + cause_err);
            return fail(1, "stage " + std::to_string(r) + " worker " + how + (err.empty() ? "" : ": " + err));
          }
        }
      }
      for (int r = 0; r < world_; ++r) {
        std::int64_t b = read_counter(*store_, keys::heartbeat(r));
        double t = now_s();
        if (b != beats[r]) {
          beats[r] = b;
          beat_at[r] = t;
        } else if (b > 0 && t - beat_at[r] > opt_.heartbeat_timeout_s) {
          if (!store_->check({keys::result(r)}))
            return fail(1, "stage " + std::to_string(r) + " worker stopped responding (no heartbeat for " +
                               std::to_string(opt_.heartbeat_timeout_s) + " s)");
        } else if (b <= 0 && t - started > 120) {
          return fail(1, "stage " + std::to_string(r) + " worker never connected");
        }
        std::string err = worker_error(r);
        if (!err.empty()) {
          auto [cause, cause_err] = root_cause(r, err);
          return fail(1, "stage " + std::to_string(cause) + ": " + cause_err);
        }
      }
      // Results first: a worker reports its last loss before its result, so
      // once every result is in, so is every loss read below.
      bool all = true;
      for (int r = 0; r < world_ && all; ++r) all = store_->check({keys::result(r)});
      while (next < iterations && store_->check({keys::loss(next)})) {
        auto j = nlohmann::json::parse(from_bytes(store_->get(keys::loss(next))));
        // A diverged iteration's loss is not a number (JSON null).
        double loss = j.at("loss").is_null() ? NAN : j.at("loss").get<double>();
        double t = j.at("t_ns").get<double>() * 1e-9;
        result_.losses.push_back(loss);
        if (first_t < 0) {
          first_t = t;
          first_it = next;
        }
        last_t = t;
        double sps = 0, eta = 0;
        if (next > first_it) {
          double per_it = (last_t - first_t) / static_cast<double>(next - first_it);
          sps = job.training.batch_size / per_it;
          eta = per_it * static_cast<double>(iterations - next - 1);
          result_.samples_per_s = sps;
          result_.iteration_ms = per_it * 1e3;
        }
        if (obs_) obs_->on_iteration(next, loss, sps, eta);
        ++next;
      }
      take_commands();
      if (!opt_.run_dir.empty()) note_checkpoints();
      if (obs_ && ++polls % 4 == 0) stream_events();
      if (all) return;
      if (mig_) mig_->poll();  // migration hook
      std::this_thread::sleep_for(std::chrono::milliseconds(mig_ && mig_->busy() ? 1 : 50));
    }
  }

  // migration hook: the events without a measured gain yet, the final plan, migration.json.
  void finish_migration() {
    if (!mig_->enabled()) return;
    if (result_.exit_code == 0) {
      try {
        mig_->poll();  // the last iterations' measurements
      } catch (const std::exception&) {
      }
    }
    mig_->finish();
    result_.plan = mig_->plan();
    if (!opt_.run_dir.empty()) try {
        write_file_atomically(opt_.run_dir + "/migration.json", mig_->report().dump(2) + "\n", "migration report");
      } catch (const std::exception& e) {
        fail(1, e.what());
      }
  }

  void shutdown() {
    if (result_.exit_code != 0) {
      try {
        store_->set(keys::kAbort, to_bytes("1"));
      } catch (...) {
      }
      for (pid_t p : pids_)
        if (p > 0) kill(p, SIGTERM);
    }
    double deadline = now_s() + (result_.exit_code != 0 ? 1.0 : 30.0);
    for (pid_t& p : pids_) {
      while (p > 0) {
        int status;
        pid_t w = waitpid(p, &status, WNOHANG);
        if (w == p || w < 0) {
          if (w == p && result_.exit_code == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            fail(1, "a worker exited with an error after reporting");
          p = 0;
        } else if (now_s() > deadline) {
          kill(p, SIGKILL);
          waitpid(p, &status, 0);
          p = 0;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    }
  }

  // Where a resumed run starts: the newest checkpoint every stage completed,
  // with the partition it was saved under (a live migration may have
  // changed it from the job's plan).
  nlohmann::json read_resume_point(PreparedJob& prepared) {
    namespace fs = std::filesystem;
    std::ifstream in(opt_.resume_dir + "/checkpoint/meta.json");
    if (!in) throw std::runtime_error(opt_.resume_dir + ": no checkpoint (checkpoint/meta.json) to resume from");
    auto meta = nlohmann::json::parse(in);
    std::string dir = opt_.resume_dir + "/" + meta.value("dir", std::string("checkpoint"));
    if (!opt_.plan && fs::exists(dir + "/plan.json")) {
      Plan saved = plan_from_json(nlohmann::json::parse(std::ifstream(dir + "/plan.json")));
      validate_plan(saved, prepared.profile.size());
      if (static_cast<int>(saved.stages.size()) != prepared.schedule->virtual_stages())
        throw SpecError("pipeline.schedule", "the checkpoint's partition has " + std::to_string(saved.stages.size()) +
                                                 " stages, this schedule runs " +
                                                 std::to_string(prepared.schedule->virtual_stages()) +
                                                 "; a resume cannot change the layout of the stages");
      prepared.plan = saved;
    }
    return {{"iteration", meta.at("iteration")}, {"dir", dir}};
  }

  // A checkpoint is complete when every stage has saved it; meta.json then
  // points at it (written atomically) and older ones are removed.
  void note_checkpoints() {
    std::int64_t complete = std::numeric_limits<std::int64_t>::max();
    for (int r = 0; r < world_; ++r) complete = std::min(complete, read_counter(*store_, keys::checkpoint_saved(r)));
    if (complete <= last_checkpoint_) return;
    namespace fs = std::filesystem;
    fs::path root = fs::path(opt_.run_dir) / "checkpoint";
    write_file_atomically((root / "meta.json").string(),
                          nlohmann::json{{"iteration", complete}, {"dir", "checkpoint/" + std::to_string(complete)}}.dump() + "\n",
                          "checkpoint index");
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(root, ec)) {
      const std::string name = d.path().filename().string();
      if (d.is_directory() && !name.empty() && name.find_first_not_of("0123456789") == std::string::npos &&
          std::stoll(name) < complete)
        fs::remove_all(d.path(), ec);
    }
    last_checkpoint_ = complete;
    if (obs_) obs_->on_checkpoint(complete);
  }

  void stream_events() {
    std::vector<Event> batch;
    for (auto& t : tails_) t.poll(batch);
    if (!batch.empty()) obs_->on_events(batch);
  }

  void notice(const std::string& m) {
    if (obs_) obs_->on_notice(m);
  }

  void take_commands() {
    if (!opt_.commands) return;
    auto can = opt_.commands->abilities();
    for (RunCommand c : opt_.commands->take()) {
      bool at_flush = c == RunCommand::Pause || c == RunCommand::Stop || c == RunCommand::Checkpoint;
      if (at_flush && !can.flushes) {
        notice("the pipedream schedule has no flush to pause, stop or checkpoint at; use SIGINT to end the run");
        continue;
      }
      switch (c) {
        case RunCommand::Pause:
          if (pause_state_ != 0) break;
          store_->add(keys::kPauseRequests, 1);
          pause_state_ = 1;
          break;
        case RunCommand::Resume:
          if (pause_state_ == 0) break;
          for (int r = 0; r < world_; ++r) store_->deleteKey(keys::paused(r));
          store_->add(keys::kResumes, 1);
          if (pause_state_ == 2 && obs_) obs_->on_paused(false);
          pause_state_ = 0;
          break;
        case RunCommand::Stop:
          if (result_.stopped) break;
          store_->add(keys::kStopRequests, 1);
          result_.stopped = true;
          break;
        case RunCommand::Checkpoint:
          if (!can.checkpoints) notice("this run has no run directory to checkpoint into");
          else store_->add(keys::kCheckpointRequests, 1);
          break;
        case RunCommand::Rebalance:
          if (!mig_ || !mig_->enabled()) notice("online replanning is off for this job (runtime.replan in the job)");
          else store_->add(migration::keys::kRebalance, 1);
          break;
      }
    }
    if (pause_state_ == 1) {
      bool all = true;
      for (int r = 0; r < world_ && all; ++r) all = store_->check({keys::paused(r)});
      if (all) {
        pause_state_ = 2;
        if (obs_) obs_->on_paused(true);
      }
    }
  }

  void collect(const JobSpec& job) {
    for (int r = 0; r < world_; ++r) {
      auto j = nlohmann::json::parse(from_bytes(store_->get(keys::result(r))));
      if (j.contains("accuracy")) result_.accuracy = j["accuracy"].get<double>();
      result_.stages.push_back(j);
    }
    if (opt_.run_dir.empty()) return;
    if (job.model.kind == "torchscript") {  // torchscript hook: trained weights back as TorchScript
      try {
        export_trained_torchscript(job, result_.plan, world_, opt_.run_dir + "/weights", opt_.run_dir + "/model.pt");
      } catch (const std::exception& e) {
        fail(1, std::string("saving the trained TorchScript model: ") + e.what());
      }
    }
    if (obs_) stream_events();  // the rest
    try {
      note_checkpoints();
    } catch (const std::exception& e) {
      fail(1, e.what());
    }
    nlohmann::json out{{"job", job.name},
                       {"stopped", result_.stopped},
                       {"losses", result_.losses},
                       {"start_iteration", result_.start_iteration},
                       {"samples_per_s", result_.samples_per_s},
                       {"iteration_ms", result_.iteration_ms},
                       {"stages", result_.stages}};
    if (result_.accuracy >= 0) out["accuracy"] = result_.accuracy;
    try {
      write_file_atomically(opt_.run_dir + "/result.json", out.dump(2) + "\n", "result");
    } catch (const std::exception& e) {
      fail(1, e.what());
    }
  }

  RunOptions opt_;
  RunObserver* obs_;
  RunResult result_;
  std::unique_ptr<LocalStoreDir> local_store_;  // before store_: the file outlives the store
  c10::intrusive_ptr<c10d::Store> store_;
  std::vector<pid_t> pids_;
  std::unique_ptr<migration::Controller> mig_;  // migration hook
  int world_ = 1;
  std::int64_t start_it_ = 0;
  std::int64_t last_checkpoint_ = 0;
  int pause_state_ = 0;  // 0 running, 1 pause requested, 2 every stage paused
  std::vector<EventTail> tails_;
};
}  // namespace

std::string default_worker_binary() {
  // The CLI lives in engine/cli and the worker in engine/runtime in a build
  // tree; installed, both are in bin/.
  std::string found = find_sibling_program("PW_WORKER", {"pipewright-worker", "../runtime/pipewright-worker",
                                                         "../engine/runtime/pipewright-worker"});
  return found.empty() ? "pipewright-worker" : found;
}

RunResult run_job(const RunOptions& options, RunObserver* observer) {
  Coordinator c(options, observer);
  return c.run();
}

}  // namespace pw::rt

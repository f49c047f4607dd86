// Supernet jobs (a job with a search_space) on real worker processes:
// `pipewright run JOB` hands them here (cmd_run.cpp), and `pipewright search`
// runs the evolutionary search over what such a run trained.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/nas/nas_run.h"
#include "cli/run_outputs.h"
#include "core/events/run_records.h"
#include "core/io/checked_write.h"
#include "core/io/run_dir_lock.h"
#include "core/nas/cache_prediction.h"
#include "core/nas/nas_job.h"
#include "core/nas/subnet_records.h"
#include "core/nas/supernet_run_info.h"
#include "core/spec/resume_check.h"
#include "core/spec/spec_error.h"
#include "runtime/child_process.h"
#include "runtime/nas/csp_launch.h"

namespace pw::cli {
// The CSP worker program: $PW_NAS_WORKER, else pw_nas_worker next to this
// executable or where the build tree puts it.
std::string nas_worker_binary() {
  std::string found = rt::find_sibling_program(
      "PW_NAS_WORKER", {"pw_nas_worker", "../runtime/nas/pw_nas_worker", "../libexec/pipewright/pw_nas_worker"});
  if (found.empty())
    throw std::runtime_error("cannot find the supernet worker program pw_nas_worker next to this executable"
                             " (set PW_NAS_WORKER)");
  return found;
}

namespace {

std::string default_run_dir(const std::string& name) {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return "runs/" + name + "-" + buf;
}

// Subnets finishing, on the terminal; every record passed on to the
// recorder (when there is one).
class Progress final : public nas::SubnetObserver {
 public:
  Progress(nas::SubnetObserver* next, int total, bool show)
      : next_(next), total_(total), every_(std::max(1, total / 10)), show_(show) {}
  void on_subnet(int id, const std::vector<int>& c, std::int64_t t) override {
    if (next_) next_->on_subnet(id, c, t);
  }
  void on_state(int id, nas::SubnetState st, int stage, std::int64_t t) override {
    if (next_) next_->on_state(id, st, stage, t);
    if (st != nas::SubnetState::Done || !show_) return;
    if (++done_ % every_ == 0 || done_ == total_)
      std::cerr << "  subnet " << done_ << "/" << total_ << "  " << fixed(t > 0 ? done_ / (t / 1e9) : 0, 1)
                << " subnets/s since launch\n";
  }
  void on_wait(const nas::SubnetWait& w) override {
    if (next_) next_->on_wait(w);
  }

 private:
  nas::SubnetObserver* next_;
  int total_, every_, done_ = 0;
  bool show_;
};
}  // namespace

int run_supernet_command(const std::string& job_file, const JobSpec& job, const RunArgs& args, const Args& given) {
  // --threads too: each supernet stage runs one intra-op thread, which keeps
  // its kernels deterministic (CSP's reproducibility rests on it).
  for (const char* o : {"attach", "eval", "profile", "planner", "port", "threads"})
    if (given.given(std::string("--") + o))
      throw UsageError(std::string("--") + o + " is not supported for a supernet job (it has a search_space); "
                       "supernet runs take --run-dir, --db, --listen, --worker, --json, --quiet, "
                       "--checkpoint-every, --resume");
  nas::NasJob nj = nas::prepare_nas_job(job);  // bad search spaces fail here, before any process starts
  nas::check_device_budget(nj);                 // and a budget no subnet fits
  const auto active = nas::stage_cache_active(nj);
  const bool any_cache = std::find(active.begin(), active.end(), true) != active.end();
  // A resume that cannot proceed changes nothing (the pipeline run's rule):
  // every check before the first write, naming the field or option.
  std::optional<rt::nas::CspResumePoint> resume;
  // The directories this run writes and resumes from are its alone while it
  // lasts (core/io/run_dir_lock.h): taken before they are read, held to the
  // end (launch_csp_run shares the same locks).
  std::vector<std::shared_ptr<RunDirLock>> locks;
  for (const std::string& dir : {args.resume, args.run_dir})
    if (!dir.empty() && std::filesystem::is_directory(dir)) locks.push_back(RunDirLock::acquire(dir));
  if (!args.resume.empty()) {
    check_resume_compatible(args.resume, job);  // SpecError naming the field, exit 2
    resume = rt::nas::read_csp_resume_point(args.resume, job.pipeline.stages);
    for (size_t r = 0; r < resume->stages.size(); ++r) {
      const auto& st = resume->stages[r];
      if (st.at("first_layer").get<int>() != nj.stages[r].first || st.at("last_layer").get<int>() != nj.stages[r].last)
        throw SpecError("pipeline.stages", "stage " + std::to_string(r) + " would hold choice layers " +
                                               std::to_string(nj.stages[r].first) + ".." + std::to_string(nj.stages[r].last) +
                                               ", the checkpoint's holds " + std::to_string(st.at("first_layer").get<int>()) +
                                               ".." + std::to_string(st.at("last_layer").get<int>()) +
                                               "; a resume cannot change the partition");
    }
    if (resume->subnet >= static_cast<int>(nj.sequence.size()))
      throw SpecError("training.iterations", std::to_string(nj.sequence.size()) + " subnets, the checkpoint " +
                                                 resume->dir + " is at subnet " + std::to_string(resume->subnet) +
                                                 ": nothing left to train");
  }
  if (nas::supernet_mode(job) != nas::SupernetMode::Csp && nas::supernet_mode(job) != nas::SupernetMode::Sequential)
    throw UsageError("pipeline.schedule: real supernet training runs the csp schedule (search_space.window 1: one "
                     "subnet at a time); gpipe, 1f1b and pipedream are simulated baselines (pipewright simulate)");
  rt::nas::CspLaunch l;
  l.worker_binary = args.worker;
  if (l.worker_binary.empty()) l.worker_binary = nas_worker_binary();
  l.job_file = job_file;
  l.overrides = args.overrides;
  l.workers = job.pipeline.stages;
  // As the pipeline run: a resume continues in its own directory unless
  // --run-dir names another (the records up to the checkpoint are carried
  // there; the checkpoint is read from the directory resumed).
  l.out_dir = !args.run_dir.empty() ? args.run_dir : !args.resume.empty() ? args.resume : default_run_dir(job.name);
  l.checkpoint_every = args.checkpoint_every;
  l.resume_dir = args.resume;
  std::filesystem::create_directories(l.out_dir);
  locks.push_back(RunDirLock::acquire(l.out_dir));  // the same lock where it existed
  write_file_atomically(l.out_dir + "/job.json", job.raw.dump(2) + "\n", "job");  // `pipewright search RUN_DIR` reads it
  const std::string& db_path = args.outputs.db_path;
  std::atomic<bool> stop{false};  // a control client's stop; outlives the outputs' control server
  l.stop = &stop;
  RunOutputs outputs(args.outputs, {new_run_id(), job.name, "run", job.pipeline.stages});
  if (outputs.recording()) {
    nlohmann::json profile = nas::supernet_profile_json(nj), plan = nas::supernet_plan_json(nj);
    outputs.begin(job.raw, &profile, &plan);
  }
#ifdef PW_HAVE_IPC
  // The control server of --listen, as for a pipeline run (cli/runtime/run_recording.cpp): status, and
  // stop, which ends the workers (recorded "stopped"). CSP workers have no agreed point to pause or
  // checkpoint at: those are refused saying so.
  if (auto* pub = outputs.publisher())
    outputs.set_control_handler([&stop, pub](const ipc::pb::ControlRequest& req) {
      namespace pb = ipc::pb;
      using R = pb::ControlRequest;
      switch (req.command_case()) {
        case R::kStop: stop = true; break;
        case R::kQueryStatus: break;
        case R::kPause:
        case R::kResume:
        case R::kCheckpoint:
        case R::kRebalance:
          return ipc::error_reply(pb::UNSUPPORTED, "a supernet run's CSP workers take stop only (no pause, "
                                                   "checkpoint or rebalance)");
        case R::kSet:
          return ipc::error_reply(pb::INVALID, "setting \"" + req.set().key() + "\" cannot change during a run");
        default: return ipc::error_reply(pb::UNSUPPORTED, "unsupported command");
      }
      pb::ControlReply reply;
      *reply.mutable_status() = pub->snapshot().status();
      return reply;
    });
#endif
  RunRecorder& rec = outputs.recorder();
  nas::SubnetRecorder deps({[&](int id, const std::vector<int>& c) { rec.subnet(id, nlohmann::json(c)); },
                            [&](const SubnetState& x) { rec.subnet_state(x); },
                            [&](const SubnetEdge& e) { rec.subnet_edge(e); }});
  const bool json = args.json;
  Progress progress(outputs.recording() ? &deps : nullptr, static_cast<int>(nj.sequence.size()),
                    !json && !args.quiet);
  l.observer = &progress;
  if (outputs.recording()) l.events = &rec;
  if (!json && !args.quiet)
    std::cerr << "run " << job.name << ": supernet " << nj.space.kind << ", " << nj.space.size() << " choice layers, "
              << nj.sequence.size() << " subnets on " << l.workers << " CSP worker processes (window "
              << nj.space.window << ")"
              << (resume ? ", resuming at subnet " + std::to_string(resume->subnet) : std::string()) << "\n";
  auto finish = [&](RunStatus status, const std::string& error, const nlohmann::json& summary) {
    deps.finish();
    outputs.finish(status, error, &summary);
  };
  rt::nas::CspRunResult r;
  try {
    r = rt::nas::launch_csp_run(l);
  } catch (const rt::nas::CspInterrupted& e) {
    // As the pipeline engine's run: recorded "interrupted", exit 128 + signal.
    finish(RunStatus::Interrupted, "interrupted", {{"error", e.what()}});
    std::cerr << "pipewright run: " << e.what() << "\n";
    return 128 + e.signal;
  } catch (const rt::nas::CspStopped& e) {
    finish(RunStatus::Stopped, e.what(), {{"error", e.what()}});
    std::cerr << "pipewright run: " << e.what() << " (the workers were ended)\n";
    return 1;
  } catch (const std::exception& e) {
    finish(RunStatus::Failed, e.what(), {{"error", e.what()}});
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  // The device cache: what each stage measured beside what the simulator
  // predicts for the same sequence and budget (counts equal, stalls not).
  nlohmann::json cache_record = nullptr;
  if (any_cache) cache_record = nas::device_cache_record(nas::predict_device_cache(nj), nas::stage_capacities(nj), r.device_cache);
  nlohmann::json hashes = nlohmann::json::array();
  for (auto h : r.stage_hashes) hashes.push_back(std::to_string(h));
  nlohmann::json summary{{"subnets", r.subnets}, {"start_subnet", r.start_subnet}, {"seconds", r.seconds}, {"subnets_per_s", r.subnets_per_s()},
                         {"samples_per_s", r.subnets_per_s() * job.training.batch_size}, {"losses", r.losses},
                         {"stage_hashes", hashes},
                         // absolute: `pipewright search RUN.sqlite` finds the weights from anywhere
                         {"run_dir", std::filesystem::absolute(l.out_dir).lexically_normal().string()},
                         {"recorded_subnet_states", deps.states()}, {"recorded_wait_edges", deps.edges()},
                         {"device_cache", cache_record}};
  rec.throughput(ThroughputSample{static_cast<std::int64_t>(r.seconds * 1e9), r.subnets - 1,
                                  r.subnets_per_s() * job.training.batch_size,
                                  r.subnets_per_s() > 0 ? 1000.0 / r.subnets_per_s() : 0});
  finish(RunStatus::Finished, "", summary);
  if (json) {
    std::cout << summary.dump(2) << "\n";
    return 0;
  }
  std::cout << "done: " << r.subnets << " subnets"
            << (r.start_subnet > 0 ? " (resumed at subnet " + std::to_string(r.start_subnet) + ")" : std::string())
            << " in " << fixed(r.seconds, 2) << " s, " << fixed(r.subnets_per_s(), 2) << " subnets/s";
  if (!r.losses.empty()) std::cout << ", loss " << fixed(r.losses.front(), 4) << " -> " << fixed(r.losses.back(), 4);
  if (any_cache) {
    std::cout << "\n  device cache (" << cache_record["eviction"].get<std::string>() << ", budget "
              << fixed(nj.budget_bytes / (1024.0 * 1024), 2) << " MiB per stage): measured / predicted\n"
              << "  stage    capacity   uses              hits             loads        MiB loaded     load stall ms\n";
    for (const auto& st : cache_record["stages"]) {
      const auto& m = st["measured"];
      const auto& pr = st["predicted"];
      auto pair = [&](const char* k, int digits) {
        std::string a = m.is_null() ? "-" : digits < 0 ? std::to_string(m[k].get<std::uint64_t>())
                                                       : fixed(m[k].get<double>() / (digits ? 1.0 : 1024.0 * 1024), 2);
        std::string b = digits < 0 ? std::to_string(pr[k].get<std::uint64_t>())
                                   : fixed(pr[k].get<double>() / (digits ? 1.0 : 1024.0 * 1024), 2);
        return pad(a + " / " + b, 18);
      };
      std::cout << pad(std::to_string(st["stage"].get<int>()), 7) << "  "
                << pad(fixed(st["capacity_bytes"].get<double>() / (1024.0 * 1024), 2) + " MiB", 10)
                << pad(std::to_string(pr["uses"].get<std::uint64_t>()), 6) << "  " << pair("hits", -1)
                << pair("loads", -1) << pair("load_bytes", 0) << pair("stall_ms", 1)
                << (m.is_null() ? "  (whole slice resident: no cache)" : "") << "\n";
    }
  }
  std::cout << "\n  run directory: " << l.out_dir << "  (pipewright search " << (db_path.empty() ? l.out_dir : db_path)
            << ")\n";
  if (outputs.recording())
    std::cout << "  recorded " << deps.states() << " subnet states, " << deps.edges() << " wait edges"
              << (db_path.empty() ? std::string() : " into " + db_path) << "\n";
  return 0;
}

std::vector<Command> nas_commands() {
  return {{"search",
           "evolutionary subnet search over a trained supernet run (search_space.search), against random search; "
           "stores every scored subnet and the accuracy/latency front in RUN.sqlite",
           define_search},
          {"export-subnet", "one subnet of a searched supernet run as a standalone TorchScript model with its trained weights",
           define_export_subnet}};
}

}  // namespace pw::cli

#include "runtime/nas/csp_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <chrono>
#include <csignal>
#include <functional>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/events/clock.h"
#include "core/io/checked_write.h"
#include "core/io/checkpoint_index.h"
#include "core/io/run_dir_lock.h"
#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"
#include "core/nas/subnet_log.h"
#include "runtime/nas/csp_checkpoints.h"
#include "runtime/nas/csp_trainer.h"
#include "runtime/child_process.h"
#include "runtime/rendezvous.h"
#include "runtime/worker_processes.h"

namespace pw::rt::nas {
namespace {

// Where worker `rank` leaves its error: beside the store, off the run's
// disk, so a full disk still gets its reason through.
std::string worker_error_file(const LocalStoreDir& store, int rank) {
  return store.file() + ".error" + std::to_string(rank);
}

// Where the launcher asks the stages to stop (created empty); stage 0
// answers in stop_request_file + ".at" with the subnet all stop before
// (csp_trainer.h). Beside the store, as the error files.
std::string stop_request_file(const LocalStoreDir& store) { return store.file() + ".stop"; }

std::string read_worker_error(const CspLaunch&, int rank, const LocalStoreDir& store) {
  std::ifstream in(worker_error_file(store, rank));
  std::string text, line;
  while (std::getline(in, line)) text += (text.empty() ? "" : " ") + line;
  return text;
}

// Each stage's record stream, followed from its start. A resumed run's
// stream up to the checkpoint is its first part; what the interrupted run
// wrote after it is redone, so it is cut off, and this launch's clock
// (`t0`) continues the checkpoint's timeline.
std::vector<pw::nas::SubnetLogTail> open_record_streams(const CspLaunch& l, const CspResumePoint* resume,
                                                        std::int64_t* t0) {
  std::vector<pw::nas::SubnetLogTail> tails;
  for (int r = 0; r < l.workers; ++r) {
    std::string records = l.out_dir + "/stage" + std::to_string(r) + ".records.jsonl";
    if (!resume) {
      std::filesystem::remove(records);  // a previous run's records are not this run's
    } else {
      const std::string from = l.resume_dir + "/stage" + std::to_string(r) + ".records.jsonl";
      const auto keep = resume->stages[r].at("records_bytes").get<std::uintmax_t>();
      std::error_code ec;
      const auto have = std::filesystem::file_size(from, ec);
      if (ec || have < keep)
        throw std::runtime_error(from + ": " + (ec ? ec.message() : std::to_string(have) + " bytes") + ", the checkpoint " +
                                 resume->dir + " recorded " + std::to_string(keep));
      std::ifstream in(from, std::ios::binary);
      std::string prefix(keep, '\0');
      in.read(prefix.data(), static_cast<std::streamsize>(keep));
      write_file_atomically(records, prefix, "subnet records");
      *t0 = std::min(*t0, steady_now_ns() - resume->stages[r].at("record_ns").get<std::int64_t>() - 1'000'000);
    }
    tails.emplace_back(records);
  }
  return tails;
}

// Checkpoints of the interrupted run past its resume point are redone
// (possibly incomplete): not to be taken for this run's. So is a temporary
// file a writer killed mid-write left (the checked writer removes its own
// on a failed write, not after SIGKILL).
void drop_redone_checkpoints(const std::string& out_dir, int resumed_at) {
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(out_dir + "/checkpoint", ec)) {
    const std::string name = d.path().filename().string();
    if (d.is_directory() && is_checkpoint_name(name) && std::stoi(name) > resumed_at)
      std::filesystem::remove_all(d.path(), ec);
    if (d.is_regular_file() && d.path().extension() == ".tmp") std::filesystem::remove(d.path(), ec);
  }
}

// Stage `r`'s command line (pw_nas_worker worker ...).
std::vector<std::string> worker_args(const CspLaunch& l, int r, const LocalStoreDir& store, std::int64_t t0,
                                     const std::string& resume_from) {
  std::vector<std::string> args = {l.worker_binary, "worker", l.job_file, "--rank", std::to_string(r), "--world",
                                   std::to_string(l.workers), "--store", store.file(), "--out", l.out_dir,
                                   "--window", std::to_string(l.window), "--t0", std::to_string(t0),
                                   "--error-file", worker_error_file(store, r),
                                   "--stop-file", stop_request_file(store)};
  if (!l.csp) args.push_back("--no-csp");
  if (l.checkpoint_every > 0)
    args.insert(args.end(), {"--checkpoint-every", std::to_string(l.checkpoint_every), "--checkpoint-dir",
                             l.out_dir + "/checkpoint"});
  if (!resume_from.empty()) args.insert(args.end(), {"--resume-from", resume_from});
  for (const auto& o : l.overrides) args.insert(args.end(), {"--set", o});
  return args;
}

// Each stage's stage<r>.json (written last: the stage succeeded).
CspRunResult read_results(const CspLaunch& l) {
  CspRunResult res;
  for (int r = 0; r < l.workers; ++r) {
    std::ifstream in(l.out_dir + "/stage" + std::to_string(r) + ".json");
    auto j = nlohmann::json::parse(in);
    res.stage_hashes.push_back(std::stoull(j.at("hash").get<std::string>()));
    if (r == 0) {
      res.seconds = j.at("seconds").get<double>();
      res.subnets = j.at("subnets").get<int>();
      res.start_subnet = j.value("start_subnet", 0);
      res.stopped = j.value("stopped", false);
    }
    std::optional<pw::nas::StageCacheFigures> cache;
    if (j.contains("device_cache") && !j["device_cache"].is_null()) {
      const auto& c = j["device_cache"];
      pw::nas::StageCacheFigures f;
      f.uses = c.at("uses").get<std::uint64_t>();
      f.hits = c.at("hits").get<std::uint64_t>();
      f.loads = c.at("loads").get<std::uint64_t>();
      f.evictions = c.at("evictions").get<std::uint64_t>();
      f.load_bytes = c.at("load_bytes").get<double>();
      f.stall_ms = c.at("stall_ms").get<double>();
      cache = f;
    }
    res.device_cache.push_back(cache);
    if (j.contains("losses"))
      for (const auto& v : j["losses"]) res.losses.push_back(v.get<float>());
  }
  return res;
}

}  // namespace

CspInterrupted::CspInterrupted(int sig)
    : std::runtime_error(std::string("interrupted by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT")), signal(sig) {}

CspRunResult launch_csp_run(const CspLaunch& l) {
  std::filesystem::create_directories(l.out_dir);
  // One run per directory (core/io/run_dir_lock.h); a caller that locked
  // them already gets its own locks back.
  std::vector<std::shared_ptr<RunDirLock>> locks{RunDirLock::acquire(l.out_dir)};
  if (!l.resume_dir.empty()) locks.push_back(RunDirLock::acquire(l.resume_dir));
  LocalStoreDir store_dir;  // the workers' FileStore: nothing listens on the network
  WorkerProcesses workers;  // after the store: destroyed first, the workers end before its directory goes
  std::int64_t t0 = steady_now_ns();  // the workers' record origin: one timeline
  std::optional<CspResumePoint> resume;
  if (!l.resume_dir.empty()) resume = read_csp_resume_point(l.resume_dir, l.workers);
  int last_checkpoint = resume ? resume->subnet : -1;
  std::vector<pw::nas::SubnetLogTail> tails = open_record_streams(l, resume ? &*resume : nullptr, &t0);
  if (resume) drop_redone_checkpoints(l.out_dir, resume->subnet);
  auto follow = [&] {
    if (l.observer || l.events)
      for (auto& t : tails) t.poll(l.observer, l.events);
  };
  for (int r = 0; r < l.workers; ++r) {
    workers.add(spawn_child(worker_args(l, r, store_dir, t0, resume ? resume->dir : std::string())));
  }
  // Reap in exit order (only our own children). A worker that died or was
  // stopped (WUNTRACED: a SIGSTOPped stage never answers its peers) fails
  // the run naming its stage and how; the others are then asked to end
  // (SIGTERM), and killed after kAbortGraceS, since a peer blocked on the
  // failed stage, or stopped itself, would otherwise wait for Gloo's timeout.
  // SIGINT/SIGTERM to the launcher ends the workers alike: CspInterrupted.
  // A stop request is not an abort: the stages drain to an agreed subnet
  // and finish as a shorter run would (see CspLaunch::commands).
  constexpr double kAbortGraceS = 1.0;
  auto interrupted = [&] { return l.interrupted ? l.interrupted() : 0; };
  std::string failed;
  auto abort_workers = [&] { workers.abort(kAbortGraceS); };
  bool stop_asked = false;
  auto ask_stop = [&] {
    if (stop_asked || !l.commands) return;
    const auto taken = l.commands->take();
    if (std::find(taken.begin(), taken.end(), RunCommand::Stop) == taken.end()) return;
    stop_asked = true;
    try {
      write_file_atomically(stop_request_file(store_dir), "", "stop request");
    } catch (const std::exception& e) {
      failed = std::string("launcher: ") + e.what();  // the workers must still be ended and reaped
      abort_workers();
    }
  };
  while (workers.running() > 0) {
    const auto ended = workers.reap_ended(/*report_stopped=*/true);
    for (const auto& [r, x] : ended) {
      if (x.ok()) continue;
      // Only the first failure is the cause; what the abort ends is not news.
      if (!workers.aborting() && failed.empty()) {
        if (x.stopped) {
          failed = "stage " + std::to_string(r) + " worker stopped responding (stopped by signal " +
                   std::to_string(x.stopped) + ")";
        } else {
          std::string why = read_worker_error(l, r, store_dir);
          failed = "stage " + std::to_string(r) + " worker " + x.how() + (why.empty() ? "" : ": " + why);
        }
      }
      abort_workers();
    }
    if (interrupted()) abort_workers();
    if (!workers.aborting()) ask_stop();
    workers.enforce_abort();
    follow();
    if (l.checkpoint_every > 0 && !workers.aborting()) {
      std::string err = note_csp_checkpoints(l.out_dir, l.workers, &last_checkpoint);
      if (!err.empty()) {
        failed = "launcher: " + err;
        abort_workers();
      }
    }
    if (ended.empty() && workers.running() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  follow();  // the rest
  // Also after a failure: a checkpoint every stage completed stays usable.
  if (l.checkpoint_every > 0) {
    std::string err = note_csp_checkpoints(l.out_dir, l.workers, &last_checkpoint);
    if (!err.empty() && failed.empty() && !interrupted()) failed = "launcher: " + err;
  }
  if (interrupted() && failed.empty()) throw CspInterrupted(interrupted());
  if (!failed.empty()) throw std::runtime_error("CSP run failed: " + failed);
  return read_results(l);
}

}  // namespace pw::rt::nas

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

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// The checkpoint directories under root whose every stage wrote its part
// (stage<r>.json is written last), newest first.
std::vector<int> complete_checkpoints(const std::filesystem::path& root, int workers) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = d.path().filename().string();
    if (!d.is_directory() || !all_digits(name) || name.size() > 9) continue;
    bool complete = true;
    for (int r = 0; r < workers && complete; ++r)
      complete = std::filesystem::exists(checkpoint_meta_file(d.path().string(), r));
    if (complete) out.push_back(std::stoi(name));
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

// The files of a complete checkpoint, as its index lists them: each
// stage's state and its part (the part written last).
std::vector<std::string> checkpoint_files(int workers) {
  std::vector<std::string> files;
  for (int r = 0; r < workers; ++r)
    for (const std::string& f : {checkpoint_state_file("", r), checkpoint_meta_file("", r)}) files.push_back(f.substr(1));
  return files;
}

// As the pipeline coordinator's note_checkpoints: the newest checkpoint
// every stage completed becomes meta.json's (atomic rename), and older
// ones go. A stage never writes into a checkpoint the others have not
// completed (they drain to it together), so nothing removed is in use.
// Returns the error instead of throwing: the launcher must still end and
// reap its workers (a full disk fails the run naming the file).
std::string note_checkpoints(const std::string& out_dir, int workers, int* last) try {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(out_dir) / "checkpoint";
  auto done = complete_checkpoints(root, workers);
  if (done.empty() || done.front() <= *last) return {};
  const int k = done.front();
  write_checkpoint_index(out_dir, "subnet", k, checkpoint_files(workers));
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(root, ec)) {
    const std::string name = d.path().filename().string();
    if (d.is_directory() && all_digits(name) && name.size() <= 9 && std::stoi(name) < k) fs::remove_all(d.path(), ec);
  }
  *last = k;
  return {};
} catch (const std::exception& e) {
  return e.what();
}

}  // namespace

CspResumePoint read_csp_resume_point(const std::string& run_dir, int workers) {
  // The index and every file it lists checked first (sizes and digests,
  // the directory inside run_dir: core/io/checkpoint_index.h); then each
  // stage's part, field by field, so a message names its file.
  const CheckpointIndex index = read_checkpoint_index(run_dir, "subnet", checkpoint_files(workers));
  CspResumePoint p;
  if (index.position > INT_MAX) throw CheckpointRefused(index.index_file + ": \"subnet\" is beyond any run");
  p.subnet = static_cast<int>(index.position);
  p.dir = index.dir;
  for (int r = 0; r < workers; ++r) {
    const std::string part = checkpoint_meta_file(p.dir, r);
    nlohmann::json j;
    try {
      j = parse_bounded_json(read_bounded_file(part, 64u << 20, "checkpoint part"));
    } catch (const SpecError& e) {
      throw CheckpointRefused(part + ": " + e.path() + ": " + e.reason());
    }
    auto integer = [&](const char* key) {
      if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer() ||
          (j[key].is_number_unsigned() ? j[key].get<std::uint64_t>() > INT64_MAX : j[key].get<std::int64_t>() < 0))
        throw CheckpointRefused(part + ": \"" + key + "\" is missing or not a non-negative integer");
      return j[key].get<std::int64_t>();
    };
    for (const char* key : {"first_layer", "last_layer"})
      if (integer(key) > INT_MAX) throw CheckpointRefused(part + ": \"" + key + "\" is beyond any search space");
    integer("records_bytes");
    integer("record_ns");
    // What the stage's trainer reads besides (CspStageTrainer::restore).
    auto all_of = [&](const char* key, auto is) {
      const bool ok = j.contains(key) && j[key].is_array() && std::all_of(j[key].begin(), j[key].end(), is);
      if (!ok) throw CheckpointRefused(part + ": \"" + key + "\" is missing or not an array of numbers");
    };
    all_of("steps", [](const nlohmann::json& v) { return v.is_number_integer(); });
    // A diverged subnet's loss is NaN, which JSON writes as null.
    if (j.contains("losses")) all_of("losses", [](const nlohmann::json& v) { return v.is_number() || v.is_null(); });
    if (integer("subnet") != p.subnet)
      throw CheckpointRefused(part + ": subnet " + std::to_string(integer("subnet")) + ", " + index.index_file +
                              " says " + std::to_string(p.subnet));
    p.stages.push_back(std::move(j));
  }
  return p;
}

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
  std::vector<pw::nas::SubnetLogTail> tails;
  for (int r = 0; r < l.workers; ++r) {
    std::string records = l.out_dir + "/stage" + std::to_string(r) + ".records.jsonl";
    if (!resume) {
      std::filesystem::remove(records);  // a previous run's records are not this run's
    } else {
      // The stream up to the checkpoint is this run's first part; what the
      // interrupted run wrote after it is redone, so it is cut off.
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
      // This launch's clock continues the checkpoint's timeline.
      t0 = std::min(t0, steady_now_ns() - resume->stages[r].at("record_ns").get<std::int64_t>() - 1'000'000);
    }
    tails.emplace_back(records);
  }
  if (resume) {
    // Checkpoints of the interrupted run past its resume point are redone
    // (possibly incomplete): not to be taken for this run's. So is a
    // temporary file a writer killed mid-write left (the checked writer
    // removes its own on a failed write, not after SIGKILL).
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator(l.out_dir + "/checkpoint", ec)) {
      const std::string name = d.path().filename().string();
      if (d.is_directory() && all_digits(name) && name.size() <= 9 && std::stoi(name) > resume->subnet)
        std::filesystem::remove_all(d.path(), ec);
      if (d.is_regular_file() && d.path().extension() == ".tmp") std::filesystem::remove(d.path(), ec);
    }
  }
  auto follow = [&] {
    if (l.observer || l.events)
      for (auto& t : tails) t.poll(l.observer, l.events);
  };
  for (int r = 0; r < l.workers; ++r) {
    std::vector<std::string> args = {l.worker_binary, "worker", l.job_file, "--rank", std::to_string(r), "--world",
                                     std::to_string(l.workers), "--store", store_dir.file(), "--out", l.out_dir,
                                     "--window", std::to_string(l.window), "--t0", std::to_string(t0),
                                     "--error-file", worker_error_file(store_dir, r),
                                     "--stop-file", stop_request_file(store_dir)};
    if (!l.csp) args.push_back("--no-csp");
    if (l.checkpoint_every > 0)
      args.insert(args.end(), {"--checkpoint-every", std::to_string(l.checkpoint_every), "--checkpoint-dir",
                               l.out_dir + "/checkpoint"});
    if (resume) args.insert(args.end(), {"--resume-from", resume->dir});
    for (const auto& o : l.overrides) args.insert(args.end(), {"--set", o});
    workers.add(spawn_child(args));
  }
  // Reap in exit order (only our own children). A worker that died or was
  // stopped (WUNTRACED: a SIGSTOPped stage never answers its peers) fails
  // the run naming its stage and how; the others are then asked to end
  // (SIGTERM), and killed after kAbortGraceS, since a peer blocked on the
  // failed stage, or stopped itself, would otherwise wait for Gloo's timeout.
  // SIGINT/SIGTERM to the launcher ends the workers alike: CspInterrupted.
  // A stop request is not an abort: the stages drain to an agreed subnet
  // and finish as a shorter run would (see CspLaunch::stop).
  constexpr double kAbortGraceS = 1.0;
  auto interrupted = [&] { return l.interrupted ? l.interrupted() : 0; };
  std::string failed;
  auto abort_workers = [&] { workers.abort(kAbortGraceS); };
  bool stop_asked = false;
  auto ask_stop = [&] {
    if (stop_asked || !l.stop || !l.stop->load()) return;
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
      std::string err = note_checkpoints(l.out_dir, l.workers, &last_checkpoint);
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
    std::string err = note_checkpoints(l.out_dir, l.workers, &last_checkpoint);
    if (!err.empty() && failed.empty() && !interrupted()) failed = "launcher: " + err;
  }
  if (interrupted() && failed.empty()) throw CspInterrupted(interrupted());
  if (!failed.empty()) throw std::runtime_error("CSP run failed: " + failed);
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

}  // namespace pw::rt::nas

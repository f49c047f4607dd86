#include "runtime/nas/csp_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/events/clock.h"
#include "core/nas/subnet_log.h"
#include "runtime/child_process.h"
#include "runtime/rendezvous.h"

namespace pw::rt::nas {
namespace {

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

// SIGINT/SIGTERM noted while the workers run (the launcher ends them and
// reports the run interrupted), the previous handlers restored after.
class InterruptWatch {
 public:
  InterruptWatch() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~InterruptWatch() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  int signal() const { return g_signal; }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// Where worker `rank` leaves its error: beside the store, off the run's
// disk, so a full disk still gets its reason through.
std::string worker_error_file(const LocalStoreDir& store, int rank) {
  return store.file() + ".error" + std::to_string(rank);
}

std::string read_worker_error(const CspLaunch&, int rank, const LocalStoreDir& store) {
  std::ifstream in(worker_error_file(store, rank));
  std::string text, line;
  while (std::getline(in, line)) text += (text.empty() ? "" : " ") + line;
  return text;
}

}  // namespace

CspInterrupted::CspInterrupted(int sig)
    : std::runtime_error(std::string("interrupted by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT")), signal(sig) {}

CspRunResult launch_csp_run(const CspLaunch& l) {
  std::filesystem::create_directories(l.out_dir);
  LocalStoreDir store_dir;  // the workers' FileStore: nothing listens on the network
  std::vector<pid_t> pids;
  const std::int64_t t0 = steady_now_ns();  // the workers' record origin: one timeline
  std::vector<pw::nas::SubnetLogTail> tails;
  for (int r = 0; r < l.workers; ++r) {
    std::string records = l.out_dir + "/stage" + std::to_string(r) + ".records.jsonl";
    std::filesystem::remove(records);  // a previous run's records are not this run's
    tails.emplace_back(records);
  }
  auto follow = [&] {
    if (l.observer || l.events)
      for (auto& t : tails) t.poll(l.observer, l.events);
  };
  for (int r = 0; r < l.workers; ++r) {
    std::vector<std::string> args = {l.worker_binary, "worker", l.job_file, "--rank", std::to_string(r), "--world",
                                     std::to_string(l.workers), "--store", store_dir.file(), "--out", l.out_dir,
                                     "--window", std::to_string(l.window), "--t0", std::to_string(t0),
                                     "--error-file", worker_error_file(store_dir, r)};
    if (!l.csp) args.push_back("--no-csp");
    for (const auto& o : l.overrides) args.insert(args.end(), {"--set", o});
    pids.push_back(spawn_child(args));
  }
  // Reap in exit order (only our own children). A worker that died or was
  // stopped (WUNTRACED: a SIGSTOPped stage never answers its peers) fails
  // the run naming its stage and how; the others are then asked to end
  // (SIGTERM), and killed after kAbortGraceS, since a peer blocked on the
  // failed stage, or stopped itself, would otherwise wait for Gloo's timeout.
  // SIGINT/SIGTERM to the launcher ends the workers alike: CspInterrupted.
  constexpr double kAbortGraceS = 1.0;
  InterruptWatch interrupts;
  std::string failed;
  std::optional<std::chrono::steady_clock::time_point> abort_at;
  auto abort_workers = [&] {
    if (abort_at) return;
    abort_at = std::chrono::steady_clock::now();
    for (pid_t p : pids)
      if (p > 0) kill(p, SIGTERM);
  };
  for (size_t left = pids.size(); left > 0;) {
    bool reaped = false;
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG | WUNTRACED) != pids[r]) continue;
      reaped = true;
      if (WIFSTOPPED(status)) {
        if (!abort_at)
          failed = "stage " + std::to_string(r) + " worker stopped responding (stopped by signal " +
                   std::to_string(WSTOPSIG(status)) + ")";
        kill(pids[r], SIGKILL);  // reaped on a later pass
        abort_workers();
        continue;
      }
      pids[r] = -1;
      --left;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
      // Only the first failure is the cause; what the abort ends is not news.
      if (!abort_at && failed.empty()) {
        std::string why = read_worker_error(l, static_cast<int>(r), store_dir);
        failed = "stage " + std::to_string(r) + " worker " +
                 (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                      : "exited with status " + std::to_string(WEXITSTATUS(status))) +
                 (why.empty() ? "" : ": " + why);
      }
      abort_workers();
    }
    if (interrupts.signal() && !abort_at) abort_workers();
    if (abort_at && std::chrono::steady_clock::now() - *abort_at > std::chrono::duration<double>(kAbortGraceS))
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL);
    follow();
    if (!reaped && left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  follow();  // the rest
  if (interrupts.signal() && failed.empty()) throw CspInterrupted(interrupts.signal());
  if (!failed.empty()) throw std::runtime_error("CSP run failed: " + failed);
  CspRunResult res;
  for (int r = 0; r < l.workers; ++r) {
    std::ifstream in(l.out_dir + "/stage" + std::to_string(r) + ".json");
    auto j = nlohmann::json::parse(in);
    res.stage_hashes.push_back(std::stoull(j.at("hash").get<std::string>()));
    if (r == 0) {
      res.seconds = j.at("seconds").get<double>();
      res.subnets = j.at("subnets").get<int>();
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

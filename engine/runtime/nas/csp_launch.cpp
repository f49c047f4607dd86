#include "runtime/nas/csp_launch.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "core/events/clock.h"
#include "core/nas/subnet_log.h"
#include "runtime/child_process.h"
#include "runtime/rendezvous.h"

namespace pw::rt::nas {

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
                                     "--window", std::to_string(l.window), "--t0", std::to_string(t0)};
    if (!l.csp) args.push_back("--no-csp");
    for (const auto& o : l.overrides) args.insert(args.end(), {"--set", o});
    pids.push_back(spawn_child(args));
  }
  // Reap in exit order (only our own children); after the first failure
  // stop the others, which would otherwise wait on the failed stage until
  // Gloo's timeout.
  std::string failed;
  for (size_t left = pids.size(); left > 0;) {
    bool reaped = false;
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] <= 0) continue;
      auto x = poll_child(pids[r]);
      if (!x) continue;
      pids[r] = -1;
      --left;
      reaped = true;
      if (x->ok()) continue;
      if (failed.empty())
        for (pid_t other : pids)
          if (other > 0) kill(other, SIGTERM);
      failed += (failed.empty() ? "" : ", ") + std::string("worker ") + std::to_string(r) + " " + x->how();
    }
    follow();
    if (!reaped && left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  follow();  // the rest
  if (!failed.empty()) throw std::runtime_error("CSP run failed: " + failed + " (stderr above)");
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

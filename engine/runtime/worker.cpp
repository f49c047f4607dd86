#include "runtime/worker.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <ATen/Parallel.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/events/event.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/spec/job_spec.h"
#include "runtime/data.h"
#include "runtime/memory.h"
#include "runtime/migration/worker_agent.h"  // migration hook
#include "runtime/protocol.h"
#include "runtime/rendezvous.h"
#include "runtime/stage.h"

namespace pw::rt {
namespace {

std::vector<std::uint8_t> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string from_bytes(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

// Keeps the coordinator informed that this process is alive and obeys its
// abort; if the coordinator itself disappears, the worker exits too (no
// orphans even when the coordinator is SIGKILLed).
class Heartbeat {
 public:
  Heartbeat(const WorkerEnv& env) : store_(connect_store(env, std::chrono::seconds(10))), rank_(env.rank) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Heartbeat() {
    stop_ = true;
    thread_.join();
  }

 private:
  void loop() {
    while (!stop_) {
      try {
        store_->add(keys::heartbeat(rank_), 1);
        if (store_->check({keys::kAbort})) std::_Exit(3);
      } catch (const std::exception&) {
        std::_Exit(4);  // the coordinator is gone
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Events of this worker, written to the run directory at the end (JSON
// lines, one per event). The seam for live telemetry is the EventSink.
class EventLog final : public EventSink {
 public:
  void on_event(const Event& e) override { events_.push_back(e); }
  void write(const std::string& file) const {
    std::ofstream out(file);
    for (const auto& e : events_)
      out << nlohmann::json{{"kind", to_string(e.kind)}, {"stage", e.stage}, {"mb", e.microbatch},
                            {"chunk", e.chunk}, {"start_ns", e.start_ns}, {"end_ns", e.end_ns},
                            {"bytes", e.bytes}, {"first_layer", e.first_layer}, {"last_layer", e.last_layer}}
                 .dump()
          << "\n";
  }
  size_t size() const { return events_.size(); }

 private:
  std::vector<Event> events_;
};

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string("environment variable ") + name + " is not set");
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < 0) throw std::runtime_error(std::string(name) + ": not a non-negative integer: \"" + v + "\"");
  return static_cast<int>(x);
}
}  // namespace

WorkerEnv worker_env_from_environment() {
  WorkerEnv e;
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) e.master_addr = a;
  if (const char* f = std::getenv("PW_STORE_FILE"); f && *f) e.store_file = f;
  if (e.store_file.empty()) e.master_port = env_int("MASTER_PORT");
  if (const char* l = std::getenv("LOCAL_RANK"); l && *l) e.local_rank = env_int("LOCAL_RANK");
  e.rank = env_int("RANK");
  e.world_size = env_int("WORLD_SIZE");
  if (e.rank >= e.world_size)
    throw std::runtime_error("RANK " + std::to_string(e.rank) + " must be < WORLD_SIZE " +
                             std::to_string(e.world_size));
  return e;
}

int run_worker(const WorkerEnv& env) {
  auto store = connect_store(env, std::chrono::seconds(120));
  Heartbeat heartbeat(env);
  try {
    auto cfg = nlohmann::json::parse(from_bytes(store->get(keys::kConfig)));
    int threads = cfg.value("threads", 1);
    at::set_num_threads(threads);
    at::set_num_interop_threads(1);
    JobSpec job = parse_job(cfg.at("job"));
    Plan plan = plan_from_json(cfg.at("plan"));
    auto schedule = make_schedule(job.pipeline.schedule, job.pipeline.stages, job.pipeline.microbatches,
                                  job.pipeline.chunks);
    if (schedule->devices() != env.world_size)
      throw std::runtime_error("WORLD_SIZE " + std::to_string(env.world_size) + " but the job has " +
                               std::to_string(schedule->devices()) + " stages");
    std::string run_dir = cfg.value("run_dir", "");
    std::int64_t first_it = cfg.value("start_iteration", 0);
    std::int64_t iterations = cfg.value("iterations", job.training.iterations);
    int ckpt_every = cfg.value("checkpoint_every", 0);

    TrainData data(job);
    TensorBytes::install();
    auto opts = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(300));
    opts->devices.push_back(gloo_device(env));
    opts->threads = 2;
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("pg", store),
                                                           env.rank, env.world_size, opts);
    EventLog log;
    migration::WorkerAgent migration(job, plan, *schedule, env.rank, store, pg, data, &log);  // migration hook
    StageExecutor stage(job, plan, *schedule, env.rank, pg, data, migration.sink());
    if (cfg.contains("resume_file")) {
      std::string f = cfg["resume_file"].get<std::string>() + "/stage" + std::to_string(env.rank) + ".pt";
      stage.load(f);
    }
    store->set(keys::ready(env.rank), to_bytes("1"));

    auto report = [&](std::int64_t it, double loss) {
      store->set(keys::loss(it), to_bytes(nlohmann::json{{"loss", loss}, {"t_ns", steady_ns()}}.dump()));
    };
    if (!stage.flushes()) {
      if (ckpt_every > 0) throw std::runtime_error("checkpoints need a schedule with a flush (gpipe, 1f1b)");
      stage.run_async(first_it, iterations, report);
    }
    for (std::int64_t it = first_it; stage.flushes() && it < iterations; ++it) {
      migration.before_iteration(it, stage);  // migration hook
      double loss = stage.run_iteration(it);
      migration.after_iteration(it, stage);  // migration hook
      if (!std::isnan(loss)) report(it, loss);
      if (ckpt_every > 0 && !run_dir.empty() && (it + 1) % ckpt_every == 0) {
        namespace fs = std::filesystem;
        fs::path dir = fs::path(run_dir) / "checkpoint";
        fs::create_directories(dir);
        std::string f = (dir / ("stage" + std::to_string(env.rank) + ".pt")).string();
        stage.save(f + ".tmp");
        fs::rename(f + ".tmp", f);
        store->add(keys::checkpoint(it + 1), 1);
      }
    }
    double accuracy = NAN;
    if (cfg.value("eval", false)) accuracy = stage.evaluate(data.test());

    MemoryBreakdown mem = stage.memory().now();
    nlohmann::json result{{"rank", env.rank},
                          {"peak_bytes", stage.memory().peak_bytes()},
                          {"budget_bytes", stage.memory().budget()},
                          {"params_bytes", mem.params},
                          {"optimizer_bytes", mem.optimizer},
                          {"events", log.size()}};
    if (!std::isnan(accuracy)) result["accuracy"] = accuracy;
    if (!run_dir.empty()) {
      namespace fs = std::filesystem;
      fs::create_directories(fs::path(run_dir) / "weights");
      fs::create_directories(fs::path(run_dir) / "events");
      stage.save((fs::path(run_dir) / "weights" / ("stage" + std::to_string(env.rank) + ".pt")).string());
      log.write((fs::path(run_dir) / "events" / ("stage" + std::to_string(env.rank) + ".jsonl")).string());
    }
    store->set(keys::result(env.rank), to_bytes(result.dump()));
    return 0;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    // c10 errors carry a backtrace after the first line; the user needs the reason.
    if (auto nl = msg.find("\nException raised from"); nl != std::string::npos) msg.resize(nl);
    try {
      store->set(keys::error(env.rank), to_bytes(msg));
    } catch (...) {
    }
    std::cerr << "pipewright-worker " << env.rank << ": " << msg << "\n";
    return 2;
  }
}

}  // namespace pw::rt

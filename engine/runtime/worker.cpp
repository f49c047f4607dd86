#include "runtime/worker.h"
#include "runtime/store_bytes.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <ATen/Parallel.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <limits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/events/clock.h"
#include "core/events/event.h"
#include "core/events/event_json.h"
#include "core/plan/plan.h"
#include "core/plan/plan_order.h"
#include "core/schedule/schedule.h"
#include "core/spec/job_spec.h"
#include "core/io/checked_write.h"
#include "runtime/data.h"
#include "runtime/device_placement.h"
#include "runtime/failure_kind.h"
#include "runtime/iteration_agreement.h"
#include "runtime/memory.h"
#include "runtime/memory_samples.h"
#include "runtime/host_allocator.h"
#include "runtime/protocol.h"
#include "runtime/process_group.h"
#include "runtime/replica_agreement.h"
#include "runtime/replica_layout.h"
#include "runtime/rendezvous.h"
#include "runtime/run_extensions.h"
#include "runtime/stage.h"
#include "runtime/tensor_parallel/tensor_agreement.h"
#include "runtime/tensor_parallel/tensor_layers.h"
#include "runtime/transport_agreement.h"

namespace pw::rt {
namespace {


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

// Events of this worker as JSON lines in the run directory, flushed after
// every iteration: the coordinator tails the file and streams the events
// to telemetry and the database while the run goes on.
class EventLog final : public EventSink {
 public:
  // `replica`: stamped on every event (Event::replica), the stage's own
  // included, so recordings tell the pipeline's replicas apart.
  EventLog(const std::string& file, int replica) : file_(file), replica_(static_cast<std::int16_t>(replica)) {
    if (file.empty()) return;
    std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    out_.open(file, std::ios::trunc);
    if (!out_) throw WriteError("events file", file, errno);
  }
  void on_event(const Event& event) override {
    ++count_;
    if (!out_.is_open()) return;
    Event e = event;
    e.replica = replica_;
    out_ << event_to_json(e).dump() << "\n";
    if (!out_ && err_ == 0) err_ = errno ? errno : EIO;  // the write that failed set it
  }
  // Checked: events the disk refused are an error naming the file and the
  // reason (ENOSPC), not a recording that silently stops.
  void flush() {
    if (!out_.is_open()) return;
    errno = 0;
    out_.flush();
    if (!out_) throw WriteError("events file", file_, err_ ? err_ : errno ? errno : EIO);
  }
  size_t size() const { return count_; }

 private:
  std::string file_;
  std::int16_t replica_ = 0;
  std::ofstream out_;
  int err_ = 0;
  size_t count_ = 0;
};

// Saves this stage's state for iteration `iteration` (after it) into its
// own directory, so a stage that is an iteration ahead never overwrites a
// checkpoint another stage has not completed yet. Replicas hold one model
// (checked, replica_agreement.h): replica 0 of each stage writes it, each of
// its tensor ranks its own shard (WorkerRole::state_file).
void save_checkpoint(StageExecutor& stage, const Plan& plan, const std::string& run_dir, const WorkerRole& role,
                     std::int64_t iteration) {
  if (role.replica != 0) return;
  namespace fs = std::filesystem;
  fs::path dir = fs::path(run_dir) / "checkpoint" / std::to_string(iteration);
  fs::create_directories(dir);
  stage.save((dir / role.state_file()).string());  // atomic, checked
  if (role.stage == 0 && role.tensor == 0)  // the partition this checkpoint's stage files follow (live migration changes it)
    write_file_atomically((dir / "plan.json").string(), to_json(plan).dump(2) + "\n", "checkpoint plan");
}

// Between two iterations while the run is paused: the heartbeat thread keeps
// the coordinator informed; a stop while paused ends the run right here.
bool wait_while_paused(c10d::Store& store, std::int64_t pause_number, std::int64_t it, IterationAgreement& stop) {
  while (read_counter(store, keys::kResumes) < pause_number) {
    if (stop.due_after(it, /*here=*/true)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string("environment variable ") + name + " is not set");
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < 0 || x > std::numeric_limits<int>::max())
    throw std::runtime_error(std::string(name) + ": not a non-negative int: \"" + v + "\"");
  return static_cast<int>(x);
}
}  // namespace

WorkerEnv worker_env_from_environment() {
  WorkerEnv e;
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) e.master_addr = a;
  if (const char* f = std::getenv("PW_STORE_FILE"); f && *f) e.store_file = f;
  if (e.store_file.empty()) e.master_port = env_int("MASTER_PORT");
  e.rank = env_int("RANK");
  // Unset (the workers `pipewright run` starts itself, one host): the stage index.
  e.local_rank = e.rank;
  if (const char* l = std::getenv("LOCAL_RANK"); l && *l) e.local_rank = env_int("LOCAL_RANK");
  e.world_size = env_int("WORLD_SIZE");
  if (e.rank >= e.world_size)
    throw std::runtime_error("RANK " + std::to_string(e.rank) + " must be < WORLD_SIZE " +
                             std::to_string(e.world_size));
  // torchrun's invariant: a host runs at most WORLD_SIZE of the ranks.
  if (e.local_rank >= e.world_size)
    throw std::runtime_error("LOCAL_RANK " + std::to_string(e.local_rank) + " must be < WORLD_SIZE " +
                             std::to_string(e.world_size));
  return e;
}

int run_worker(const WorkerEnv& env) {
  tune_host_allocator();
  auto store = connect_store(env, std::chrono::seconds(120));
  Heartbeat heartbeat(env);
  WorkerRole role = role_of_rank(env.rank, 1);  // until the job says how many replicas
  try {
    auto cfg = nlohmann::json::parse(from_bytes(store->get(keys::kConfig)));
    int threads = cfg.value("threads", 1);
    at::set_num_threads(threads);
    at::set_num_interop_threads(1);
    JobSpec job = parse_job(cfg.at("job"));
    Plan plan = plan_from_json(cfg.at("plan"));
    // pipeline.schedule "generated": the order stored in the plan, which
    // the simulator ran too (core/plan/plan_order.h).
    auto schedule = make_plan_schedule(job.pipeline.schedule, job.pipeline.stages, job.pipeline.microbatches,
                                       job.pipeline.chunks, plan);
    // WORLD rank = (stage x parallel.data + replica) x parallel.tensor +
    // tensor rank (replica_layout.h).
    const int replicas = job.parallel.data, tensors = job.parallel.tensor;
    check_tensor_parallel(job);
    role = role_of_rank(env.rank, replicas, tensors);
    if (static_cast<long long>(schedule->devices()) * replicas * tensors != env.world_size)
      throw std::runtime_error("WORLD_SIZE " + std::to_string(env.world_size) + " but the job has " +
                               std::to_string(schedule->devices()) + " stages x " + std::to_string(replicas) +
                               " replicas (parallel.data)" +
                               (tensors > 1 ? " x " + std::to_string(tensors) + " tensor ranks (parallel.tensor)" : ""));
    if (!plan.replicas.empty())
      throw std::runtime_error("the plan's per-stage \"replicas\" cannot run (stages replicated unequally); "
                               "use parallel.data");
    std::string run_dir = cfg.value("run_dir", "");
    std::int64_t first_it = cfg.value("start_iteration", 0);
    std::int64_t iterations = cfg.value("iterations", job.training.iterations);
    int ckpt_every = cfg.value("checkpoint_every", 0);

    // The transport and this stage's device, decided alike by every stage
    // from what all of them see (core/cluster/transport_choice.h).
    StageDevice placement = StageDevice::from(
        agree_transport(*store, env.rank, env.world_size, env.local_rank, job.cluster.backend), env.rank);
    make_current(placement);
    std::cerr << "pipewright-worker " << role.name() << ": " << placement.describe() << "\n";
    TrainData data(job);
    data.set_device(placement.device);
    data.set_replica(role.replica);
    TensorBytes::install();
    // Each replica's pipeline is a group of its stages (rank = stage), and
    // each stage's replicas a group of their own (rank = replica), apart in
    // the store by their prefixes. A split stage's tensor rank k belongs to
    // tensor rank k's pipeline and replicas (each rank k a whole pipeline of
    // shards), and to its stage's tensor group (rank = k).
    const std::string tensor_suffix = tensors > 1 ? ".t" + std::to_string(role.tensor) : "";
    const GlooGroupOptions group_options{
        .prefix = (replicas > 1 ? "pg.r" + std::to_string(role.replica) : "pg") + tensor_suffix,
        .timeout = std::chrono::seconds(300), .threads = 2,
        .device = placement.backend == "gloo" ? gloo_device(env) : nullptr};
    auto pg = make_process_group(placement.backend, store, role.stage, schedule->devices(), group_options);
    ReplicaSet replica_set;
    replica_set.index = role.replica;
    replica_set.count = replicas;
    if (replicas > 1) {
      GlooGroupOptions o = group_options;
      o.prefix = "dp.s" + std::to_string(role.stage) + tensor_suffix;
      replica_set.group = make_process_group(placement.backend, store, role.replica, replicas, o);
    }
    TensorSet tensor_set;
    tensor_set.index = role.tensor;
    tensor_set.count = tensors;
    tensor_set.placement = placement;
    if (tensors > 1) {
      GlooGroupOptions o = group_options;
      o.prefix = "tp.s" + std::to_string(role.stage) + ".r" + std::to_string(role.replica);
      tensor_set.group = make_process_group(placement.backend, store, role.tensor, tensors, o);
    }
    EventLog log(run_dir.empty() || !role.records_events() ? "" : run_dir + "/events/" + role.events_file(),
                 role.replica);
    // What the stage holds at each iteration's end, beside its events (memory_samples.h).
    MemorySampleLog memory_log(run_dir.empty() || !role.records_events() ? "" : run_dir + "/events/" + role.events_file(),
                               role.stage, role.replica);
    auto extensions = stage_extensions({job, plan, *schedule, role.stage, store, pg, data, replica_set}, &log);
    EventSink* sink = &log;
    for (auto& e : extensions)
      if (EventSink* s = e->sink()) sink = s;
    // The partition the stage runs now (an extension may change it).
    auto plan_now = [&]() -> const Plan& {
      const Plan* p = &plan;
      for (auto& e : extensions)
        if (const Plan* q = e->plan()) p = q;
      return *p;
    };
    StageExecutor stage(job, plan, *schedule, role.stage, pg, data, sink, placement, replica_set, tensor_set);
    if (cfg.contains("resume_file")) {  // every replica loads its stage's one file (its tensor rank's shard)
      std::string f = cfg["resume_file"].get<std::string>() + "/" + role.state_file();
      stage.load(f);
    }
    store->set(keys::ready(env.rank), to_bytes("1"));

    auto report = [&](std::int64_t it, double loss) {
      if (role.replica != 0 || role.tensor != 0) return;  // the replicas' mean, reported once
      store->set(keys::loss(it), to_bytes(nlohmann::json{{"loss", loss}, {"t_ns", steady_now_ns()}}.dump()));
    };
    if (!stage.flushes()) {
      if (ckpt_every > 0) throw std::runtime_error("checkpoints need a schedule with a flush (gpipe, 1f1b)");
      // The last stage's replicas each report every iteration (NaN where a
      // microbatch's loss was), in the same order: their mean is the run's.
      stage.run_async(first_it, iterations, [&](std::int64_t it, double loss) {
        loss = mean_over_replicas(replica_set, placement, loss);
        if (!std::isnan(loss)) report(it, loss);
      });
      memory_log.sample(stage.memory());  // no iteration boundary: once, at the end
    }
    // Replicas are one model: their weights' hashes compared, the check
    // logged by replica 0 (a mismatch fails the run naming stage and replicas).
    std::string weights_hash;
    auto check_replicas = [&](std::int64_t it) {
      if (tensors > 1) check_tensor_ranks_agree(tensor_set, role, stage.replicated_parameters(), it + 1);
      if (replicas < 2) return;
      auto hashes = check_replicas_agree(replica_set, placement, role, stage.parameters(), it + 1);
      weights_hash = hex64(hashes[0]);
      if (role.replica == 0)
        std::cerr << "pipewright-worker " << role.name() << ": weights of its " << replicas
                  << " replicas agree after iteration " << it + 1 << " (FNV-1a " << weights_hash << ")\n";
    };
    IterationAgreement pause(store, keys::kPauseRequests), stop(store, keys::kStopRequests),
        checkpoint(store, keys::kCheckpointRequests);
    std::int64_t pauses = 0;
    for (std::int64_t it = first_it; stage.flushes() && it < iterations; ++it) {
      for (auto& e : extensions) e->before_iteration(it, stage);
      double loss = stage.run_iteration(it);
      if (stage.computes_loss()) loss = mean_over_replicas(replica_set, placement, loss);
      for (auto& e : extensions) e->after_iteration(it, stage);
      if ((replicas > 1 || tensors > 1) && (it + 1) % kReplicaCheckEvery == 0) check_replicas(it);
      memory_log.sample(stage.memory());
      log.flush();
      if (stage.computes_loss()) report(it, loss);
      bool asked = checkpoint.due_after(it);
      if (!run_dir.empty() && (asked || (ckpt_every > 0 && (it + 1) % ckpt_every == 0))) {
        save_checkpoint(stage, plan_now(), run_dir, role, it + 1);
        store->set(keys::checkpoint_saved(env.rank), to_bytes(std::to_string(it + 1)));
      }
      if (pause.due_after(it)) {
        store->set(keys::paused(env.rank), to_bytes(std::to_string(it + 1)));
        if (wait_while_paused(*store, ++pauses, it, stop)) {
          iterations = it + 1;
          break;
        }
      }
      if (stop.due_after(it)) iterations = it + 1;
    }
    // The last iteration's weights, checked whatever the interval left.
    // (The async schedule has no per-iteration check: always here.)
    if ((replicas > 1 || tensors > 1) && iterations > first_it &&
        (!stage.flushes() || iterations % kReplicaCheckEvery != 0))
      check_replicas(iterations - 1);
    double accuracy = NAN;
    if (cfg.value("eval", false)) accuracy = stage.evaluate(data.test());

    MemoryBreakdown mem = stage.memory().now();
    nlohmann::json result{{"rank", env.rank},
                          {"stage", role.stage},
                          {"replica", role.replica},
                          {"tensor", role.tensor},
                          {"peak_bytes", stage.memory().peak_bytes()},
                          {"budget_bytes", stage.memory().budget()},
                          {"params_bytes", mem.params},
                          {"optimizer_bytes", mem.optimizer},
                          {"events", log.size()},
                          {"transport", {{"backend", placement.backend},
                                         {"device", placement.device.str()},
                                         {"host_staged", placement.host_staged}}}};
    if (!std::isnan(accuracy)) result["accuracy"] = accuracy;
    if (!weights_hash.empty()) result["weights_fnv1a"] = weights_hash;  // with replicas: the last check's
    result["iterations"] = iterations;  // fewer than the job's when the run was stopped
    if (!run_dir.empty() && role.replica == 0) {  // the replicas' one model (their hashes agree)
      namespace fs = std::filesystem;
      fs::create_directories(fs::path(run_dir) / "weights");
      stage.save((fs::path(run_dir) / "weights" / role.state_file()).string());
    }
    log.flush();
    store->set(keys::result(env.rank), to_bytes(result.dump()));
    return 0;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    // c10 errors carry a backtrace after the first line; the user needs the reason.
    if (auto nl = msg.find("\nException raised from"); nl != std::string::npos) msg.resize(nl);
    // The coordinator names the stage; drop our own prefix (memory errors carry it).
    if (std::string own = "stage " + std::to_string(role.stage) + ": "; msg.rfind(own, 0) == 0) msg.erase(0, own.size());
    try {
      // The type is known only here: the coordinator blames by it (failure_kind.h).
      store->set(keys::error_kind(env.rank), to_bytes(to_string(failure_kind(e))));
      store->set(keys::error(env.rank), to_bytes(msg));
    } catch (...) {
    }
    std::cerr << "pipewright-worker " << role.name() << ": " << msg << "\n";
    return 2;
  }
}

}  // namespace pw::rt

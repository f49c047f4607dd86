// A run from start to end: plan, publish the configuration, start the
// workers, follow them, shut down, collect (the parts in engine/runtime/coordinator/).
#include "runtime/coordinator/coordinator_impl.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>
#include <filesystem>
#include <thread>

#include "core/job/resume_check.h"
#include "core/io/checked_write.h"
#include "runtime/child_process.h"
#include "runtime/protocol.h"
#include "runtime/run_extensions.h"
#include "runtime/tensor_parallel/tensor_layers.h"
#include "runtime/transport_agreement.h"

namespace pw::rt::coordinator_impl {

RunResult Coordinator::run() {
  // Our own workers share this host: a backend it cannot run (nccl without
  // CUDA) is a job error (SpecError, exit 2) before anything is written or started.
  if (!opt_.attach)
    local_transport(opt_.job.cluster.backend, opt_.job.pipeline.stages * std::max(1, opt_.job.parallel.data) *
                                                  std::max(1, opt_.job.parallel.tensor));
  lock_directories();
  // Before anything is written: a resume that cannot proceed leaves its
  // directory as it was (SpecError or CheckpointRefused, exit 2, naming the
  // field or the file).
  if (!opt_.resume_dir.empty()) {
    check_resume_compatible(opt_.resume_dir, opt_.job);
    check_resume_point();
  }
  for (auto& e : extensions_) e->before_planning(opt_.job, opt_.run_dir);
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
  check_replicas_supported(prepared);
  check_tensor_parallel(job);
  replicas_ = job.parallel.data;
  tensors_ = job.parallel.tensor;
  // WORLD rank = (stage x replicas + replica) x tensors + tensor rank (replica_layout.h).
  world_ = job.pipeline.stages * replicas_ * tensors_;
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
  for (auto& e : extensions_) e->on_store(prepared, store_, obs_);

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
    locks_.push_back(RunDirLock::acquire(opt_.run_dir));  // the one locked at the start, if it existed
    write_file_atomically(opt_.run_dir + "/job.json", job.raw.dump(2) + "\n", "job");
    write_file_atomically(opt_.run_dir + "/plan.json", to_json(prepared.plan).dump(2) + "\n", "plan");
  }
  if (opt_.commands) {
    RunCommands::Abilities a;
    a.flushes = prepared.schedule->flushes();
    a.checkpoints = !opt_.run_dir.empty();
    for (auto& e : extensions_) e->add_abilities(a);
    opt_.commands->set_abilities(a);
  }
  if (!opt_.run_dir.empty())
    for (int r = 0; r < world_; ++r) {
      const WorkerRole role = role_of_rank(r, replicas_, tensors_);
      if (!role.records_events()) continue;
      // A reused run directory (--overwrite, a resume) still holds the last
      // run's event logs: followed before this run's workers truncate them,
      // they would be recorded as this run's events.
      std::string log = opt_.run_dir + "/events/" + role.events_file();
      std::filesystem::remove(log);
      tails_.emplace_back(log);
    }
  store_->set(keys::kConfig, to_bytes(cfg.dump()));
  result_.start_iteration = start_it_;
  for (auto& e : extensions_) e->on_start(start_it_);
  if (obs_) obs_->on_start(prepared, static_cast<int>(start_it_));

  if (!opt_.attach) {
    std::string bin = opt_.worker_binary.empty() ? default_worker_binary() : opt_.worker_binary;
    if (access(bin.c_str(), X_OK) != 0) throw std::runtime_error("worker executable not found: " + bin);
    for (int r = 0; r < world_; ++r) workers_.add(spawn_worker(bin, local_store_->file(), r, world_));
  }
  try {
    follow(job);
    // Also after a failure: the stages' completed checkpoints stay usable.
    if (!opt_.run_dir.empty()) note_checkpoints();
  } catch (const std::exception& e) {
    fail(1, std::string("coordinator: ") + e.what());
  }
  shutdown();
  after_workers();
  if (result_.exit_code == 0) collect(job);
  if (obs_) obs_->on_finish(result_);
  return result_;
}

// A second run, resume or export into a directory this run writes (or
// resumes from) is refused naming this one (core/io/run_dir_lock.h). A run
// directory that does not exist yet is locked as it is made.
void Coordinator::lock_directories() {
  namespace fs = std::filesystem;
  for (const std::string* dir : {&opt_.resume_dir, &opt_.run_dir})
    if (!dir->empty() && fs::is_directory(*dir)) locks_.push_back(RunDirLock::acquire(*dir));
}

void Coordinator::fail(int code, const std::string& why) {
  if (result_.exit_code == 0) {
    result_.exit_code = code;
    result_.error = why + extensions_failure_context();
  }
}

void Coordinator::notice(const std::string& m) {
  if (obs_) obs_->on_notice(m);
}

}  // namespace pw::rt::coordinator_impl

namespace pw::rt {

std::string default_worker_binary() {
  // The CLI lives in engine/cli and the worker in engine/runtime in a build
  // tree; installed, both are in bin/.
  std::string found = find_sibling_program("PW_WORKER", {"pipewright-worker", "../runtime/pipewright-worker",
                                                         "../engine/runtime/pipewright-worker"});
  return found.empty() ? "pipewright-worker" : found;
}

RunResult run_job(const RunOptions& options, RunObserver* observer) {
  coordinator_impl::Coordinator c(options, observer, coordinator_extensions());
  return c.run();
}

}  // namespace pw::rt

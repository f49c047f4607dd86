#include "runtime/nas/csp_trainer.h"

// One stage of a CPU supernet pipeline (csp_trainer.h) over its parts:
// the transport (stage_transport.h), the record stream (stage_recorder.h),
// the device cache (stage_cache.h) and the policy step (stage_policy.h).
#include <ATen/Parallel.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/io/checked_write.h"
#include "core/nas/csp_policy.h"
#include "core/nas/nas_job.h"
#include "runtime/data.h"
#include "runtime/process_group.h"
#include "runtime/rendezvous.h"
#include "runtime/worker.h"
#include "runtime/nas/stage_cache.h"
#include "runtime/nas/stage_policy.h"
#include "runtime/nas/stage_recorder.h"
#include "runtime/nas/stage_transport.h"
#include "runtime/nas/supernet_modules.h"

namespace pw::rt::nas {
namespace {
using pw::nas::CspActionKind;
using pw::nas::CspStage;

// A subnet between its forward and its backward on this stage.
struct InFlight {
  at::Tensor input, output, loss;
};

std::string read_whole(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + what + " \"" + path + "\"");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::int64_t activation_bytes(const InFlight& f) {
  std::int64_t b = 0;
  for (const at::Tensor* t : {&f.input, &f.output})
    if (t->defined()) b += static_cast<std::int64_t>(t->nbytes());
  return b;
}

}  // namespace

std::string checkpoint_state_file(const std::string& dir, int rank) {
  return dir + "/stage" + std::to_string(rank) + ".bin";
}
std::string checkpoint_meta_file(const std::string& dir, int rank) {
  return dir + "/stage" + std::to_string(rank) + ".json";
}

namespace {
// One stage of the supernet pipeline: the policy step (CspStage, or the
// racing baseline), forward, backward + update, checkpoints, and the
// stage's results, over the parts above.
class CspStageTrainer {
 public:
  explicit CspStageTrainer(const CspWorkerConfig& cfg);
  void run();
  bool stopped_early() const { return stop_at_ < subnets_; }

 private:
  std::optional<pw::nas::CspAction> policy_step();
  void sample_memory();
  void forward(int b, std::int64_t start);
  void backward(int b, std::int64_t start);
  void restore(const std::string& dir);
  void plan_checkpoint();
  void check_stop_request();
  int end() const { return std::min(subnets_, stop_at_); }
  void save_checkpoint(int k);
  void write_results(double seconds, int idle_waits);

  const CspWorkerConfig& cfg_;
  JobSpec job_;
  pw::nas::NasJob nj_;
  int subnets_;  // in the sequence (training.iterations)
  int stage_;    // this process's rank
  int stages_;   // the pipeline's (world size)
  int window_;
  std::unique_ptr<CnnSupernet> net_;
  CandidateOptimizer optimizer_;
  std::unique_ptr<pw::rt::TrainData> data_;  // subnet b trains on microbatch (b, 0)
  std::unique_ptr<CspStage> csp_;
  std::map<int, float> losses_;  // last stage: per subnet (a resumed run: from subnet 0)
  std::map<int, InFlight> live_;
  int start_ = 0;
  int next_checkpoint_ = INT_MAX;
  int stop_at_ = INT_MAX;      // a stop request's agreed subnet: nothing from it on trains
  int next_unstarted_ = 0;     // stage 0: one past the highest subnet it started
  StageClock clock_;
  std::unique_ptr<StageRecorder> rec_;
  std::unique_ptr<StageCache> cache_;
  std::unique_ptr<StageTransport> transport_;
  std::unique_ptr<StagePolicy> policy_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

JobSpec load_stage_job(const CspWorkerConfig& cfg) {
  at::set_num_threads(cfg.threads);  // before any tensor work (1 keeps kernels deterministic)
  std::vector<std::string> overrides = cfg.overrides;
  overrides.push_back("pipeline.stages=" + std::to_string(cfg.world));
  overrides.push_back("cluster.devices=" + std::to_string(cfg.world));
  return load_job(cfg.job_file, overrides);
}

CspStageTrainer::CspStageTrainer(const CspWorkerConfig& cfg)
    : cfg_(cfg),
      job_(load_stage_job(cfg)),
      nj_(pw::nas::prepare_nas_job(job_)),
      subnets_(static_cast<int>(nj_.sequence.size())),
      stage_(cfg.rank),
      stages_(cfg.world),
      window_(cfg.window > 0 ? cfg.window : nj_.space.window),
      optimizer_{job_.training.optimizer, job_.training.lr},
      clock_(cfg.t0_ns) {
  for (size_t r = 0; r < nj_.stages.size(); ++r)
    if (nj_.stages[r].size() < 1)
      throw std::runtime_error("stage " + std::to_string(r) + " holds no choice layer (the partition gave the head a "
                               "stage of its own); the CPU trainer needs one per stage: use fewer stages");
  net_ = std::make_unique<CnnSupernet>(job_, nj_.space, nj_.stages[stage_]);
  pw::nas::check_device_budget(nj_);
  data_ = std::make_unique<pw::rt::TrainData>(job_);
  csp_ = std::make_unique<CspStage>(stage_, stages_, nj_.stages[stage_], &nj_.sequence, window_);
  policy_ = std::make_unique<StagePolicy>(*csp_, cfg.csp, window_);
  if (!cfg.resume_from.empty()) restore(cfg.resume_from);
  next_unstarted_ = start_;
  plan_checkpoint();

  WorkerEnv env;
  env.rank = stage_;
  env.world_size = stages_;
  env.store_file = cfg.store_file;
  auto store = connect_store(env, std::chrono::seconds(60));
  pg_ = make_gloo_group(store, stage_, stages_, {.prefix = "nas", .timeout = std::chrono::seconds(120), .threads = 1,
                                        .device = gloo_device(env)});
  transport_ = std::make_unique<StageTransport>(pg_, stage_, stages_, net_->activation_shape(job_.training.microbatch_size),
                                                subnets_ - start_);
  rec_ = std::make_unique<StageRecorder>(cfg.out_dir + "/stage" + std::to_string(stage_) + ".records.jsonl", start_ > 0, stage_,
                                         nj_.stages[stage_], clock_);
  // A budget below this stage's slice: candidates live in a host store and
  // a device cache that follows core's plan (the simulator's planned model).
  cache_ = std::make_unique<StageCache>(nj_, stage_, window_, *net_, clock_, *rec_);
  cache_->replay_to(start_);  // after restore(): the host store took the checkpoint's values
}

// Where this run starts: subnet 0, or a checkpoint's subnet k with the
// weights, optimizer state and losses of subnets < k. The subnet sequence
// and each subnet's batch are pure functions of (seed, id), so nothing else
// (no RNG stream) needs restoring.
void CspStageTrainer::restore(const std::string& dir) {
  const std::string meta_file = checkpoint_meta_file(dir, stage_);
  nlohmann::json meta = nlohmann::json::parse(read_whole(meta_file, "checkpoint"));
  start_ = meta.at("subnet").get<int>();
  const auto& slots = nj_.stages[stage_];
  if (meta.at("first_layer").get<int>() != slots.first || meta.at("last_layer").get<int>() != slots.last)
    throw std::runtime_error(meta_file + ": the checkpoint's stage " + std::to_string(stage_) + " holds choice layers " +
                             std::to_string(meta.at("first_layer").get<int>()) + ".." +
                             std::to_string(meta.at("last_layer").get<int>()) + ", this job's " +
                             std::to_string(slots.first) + ".." + std::to_string(slots.last) +
                             "; a resume cannot change the partition");
  if (start_ >= subnets_)
    throw std::runtime_error(meta_file + ": the checkpoint is at subnet " + std::to_string(start_) +
                             ", training.iterations is " + std::to_string(subnets_) + ": nothing left to train");
  net_->restore_state(read_whole(checkpoint_state_file(dir, stage_), "checkpoint"),
                      meta.at("steps").get<std::vector<std::int64_t>>(), checkpoint_state_file(dir, stage_));
  if (net_->has_head()) {
    auto l = meta.at("losses").get<std::vector<float>>();
    if (static_cast<int>(l.size()) != start_)
      throw std::runtime_error(meta_file + ": " + std::to_string(l.size()) + " losses for " + std::to_string(start_) +
                               " subnets");
    for (int b = 0; b < start_; ++b) losses_[b] = l[b];
  }
  csp_->start_at(start_);
}

// The next checkpoint: stage 0 admits nothing past it until every stage
// has drained to it and saved (CspStage::hold_from).
void CspStageTrainer::plan_checkpoint() {
  const int every = cfg_.checkpoint_every;
  next_checkpoint_ = every > 0 ? (csp_->oldest_unfinished() / every + 1) * every : INT_MAX;
  if (next_checkpoint_ >= subnets_) next_checkpoint_ = INT_MAX;  // the end of the run saves everything anyway
  csp_->hold_from(std::min(next_checkpoint_, stop_at_));
}

// A stop agreed at a subnet boundary, as a checkpoint is: stage 0 alone
// admits subnets, so it alone chooses k (the first it has not started) and
// tells the others through the file; subnets below k still finish.
void CspStageTrainer::check_stop_request() {
  if (cfg_.stop_file.empty() || stop_at_ != INT_MAX) return;
  const std::string agreed = cfg_.stop_file + ".at";
  std::error_code ec;
  if (stage_ == 0) {
    if (!std::filesystem::exists(cfg_.stop_file, ec)) return;
    stop_at_ = next_unstarted_;
    write_file_atomically(agreed, std::to_string(stop_at_) + "\n", "stop point");
  } else {
    if (!std::filesystem::exists(agreed, ec)) return;
    stop_at_ = std::stoi(read_whole(agreed, "stop point"));
  }
  csp_->hold_from(std::min(next_checkpoint_, stop_at_));
}

// Every subnet < k is finished here and none >= k started (stage 0 holds
// them back): this stage's state is that of k sequential steps. The state
// file goes first, the small JSON last (the launcher counts a stage's part
// done by it), both through the checked writer; the record stream is
// flushed and synced so its first `records_bytes` survive.
void CspStageTrainer::save_checkpoint(int k) {
  const std::string dir = cfg_.checkpoint_dir + "/" + std::to_string(k);
  std::filesystem::create_directories(dir);
  write_file_atomically(checkpoint_state_file(dir, stage_), cache_->state_bytes(*net_), "supernet checkpoint");
  const std::uintmax_t records_bytes = rec_->sync();
  nlohmann::json meta{{"subnet", k},
                      {"stage", stage_},
                      {"world", stages_},
                      {"first_layer", nj_.stages[stage_].first},
                      {"last_layer", nj_.stages[stage_].last},
                      {"steps", net_->optimizer_steps()},
                      {"hash", std::to_string(net_->hash())},
                      {"records_bytes", records_bytes},
                      {"record_ns", clock_.now()}};
  if (net_->has_head()) {
    std::vector<float> l;
    for (int b = 0; b < k; ++b) l.push_back(losses_.at(b));
    meta["losses"] = l;
  }
  write_file_atomically(checkpoint_meta_file(dir, stage_), meta.dump() + "\n", "supernet checkpoint");
}

// The next action (stage_policy.h); CSP's waits reported once each.
std::optional<pw::nas::CspAction> CspStageTrainer::policy_step() {
  std::vector<pw::nas::SubnetWait> waits;
  auto a = policy_->next([this](int b) { return live_.count(b) > 0; }, transport_->first_activation(), &waits);
  rec_->waits(waits);
  return a;
}

// After each action: the candidates on the device and the activations of
// the subnets in flight here.
void CspStageTrainer::sample_memory() {
  std::int64_t bytes = cache_->resident_bytes();
  for (const auto& [b, f] : live_) bytes += activation_bytes(f);
  rec_->memory(bytes);
}

void CspStageTrainer::forward(int b, std::int64_t start) {
  const auto& subnet = nj_.sequence[b];
  csp_->forward_started(b);
  cache_->started(b);
  next_unstarted_ = std::max(next_unstarted_, b + 1);
  if (stage_ == 0) rec_->log().on_subnet(b, subnet, start);
  rec_->log().on_state(b, pw::nas::SubnetState::Forward, stage_, start);
  InFlight f;
  if (stage_ == 0) {
    f.input = net_->stem(data_->microbatch(b, 0).input);
  } else {
    f.input = transport_->take_activation(b);
    f.input.set_requires_grad(true);
  }
  f.output = net_->layers(subnet, f.input);
  if (net_->has_head()) {
    f.loss = loss(net_->head(f.output), data_->microbatch(b, 0).target);
    losses_[b] = f.loss.item<float>();
    csp_->backward_ready(b);
  } else {
    transport_->send_activation(b, f.output.detach());
  }
  live_[b] = std::move(f);
  rec_->event(pw::EventKind::Forward, b, start, clock_.now());
}

void CspStageTrainer::backward(int b, std::int64_t start) {
  csp_->backward_started(b);
  rec_->log().on_state(b, pw::nas::SubnetState::Backward, stage_, start);
  InFlight& f = live_[b];
  if (net_->has_head()) {
    f.loss.backward();
  } else {
    at::Tensor g = transport_->take_gradient(b);
    if (f.output.requires_grad()) f.output.backward(g);
  }
  if (stage_ > 0) transport_->send_gradient(b, f.input.grad().defined() ? f.input.grad() : at::zeros(transport_->shape()));
  const std::int64_t upd = clock_.now();
  rec_->event(pw::EventKind::Backward, b, start, upd);
  rec_->log().on_state(b, pw::nas::SubnetState::Update, stage_, upd);
  net_->update(nj_.sequence[b], optimizer_);  // this subnet's own layers, right after its backward
  live_.erase(b);
  csp_->backward_done(b);
  cache_->released(b);
  rec_->forget(b);
  const std::int64_t done = clock_.now();
  rec_->event(pw::EventKind::OptimizerStep, b, upd, done);
  if (stage_ == 0) rec_->log().on_state(b, pw::nas::SubnetState::Done, 0, done);  // stage 0 finishes a subnet last
  if (csp_->oldest_unfinished() >= next_checkpoint_) {
    save_checkpoint(next_checkpoint_);
    plan_checkpoint();
  }
}

void CspStageTrainer::run() {
  pg_->barrier()->wait();
  const std::int64_t started = clock_.now();
  sample_memory();
  int idle_waits = 0;
  while (!csp_->all_done() && csp_->oldest_unfinished() < stop_at_) {
    rec_->check();
    check_stop_request();
    transport_->deliver(*csp_);
    std::optional<pw::nas::CspAction> a = policy_step();
    if (a && a->kind == CspActionKind::Forward && !cache_->prepare_forward(a->subnet, clock_.now())) a.reset();
    if (!a) {
      // Only an arrival can make work here (own actions were taken).
      idle_waits++;
      transport_->sleep_until_arrival();
      continue;
    }
    const std::int64_t start = clock_.now();
    cache_->action_starts(start);
    if (a->kind == CspActionKind::Forward) forward(a->subnet, start);
    else backward(a->subnet, start);
    sample_memory();
    cache_->prefetch(std::min(next_checkpoint_, stop_at_));
  }
  transport_->drain();
  const double seconds = static_cast<double>(clock_.now() - started) / 1e9;
  pg_->barrier()->wait();
  write_results(seconds, idle_waits);
}

// The stage's three outputs: its trained candidates (stage<r>.bin, for the
// search), the rest of its record stream, and its results (stage<r>.json,
// written last: the launcher reads it as the stage's success).
void CspStageTrainer::write_results(double seconds, int idle_waits) {
  nlohmann::json cache_json = cache_->finish();  // also puts every candidate back in the host store
  nlohmann::json out{{"stage", stage_},
                     {"world", stages_},
                     {"subnets", end()},
                     {"stopped", stopped_early()},
                     {"start_subnet", start_},
                     {"seconds", seconds},
                     {"hash", std::to_string(net_->hash())},
                     {"first_layer", nj_.stages[stage_].first},
                     {"last_layer", nj_.stages[stage_].last},
                     {"idle_waits", idle_waits},
                     {"device_cache", cache_json}};
  if (net_->has_head()) {
    nlohmann::json l = nlohmann::json::array();
    for (int b = 0; b < end(); ++b) l.push_back(losses_[b]);
    out["losses"] = l;
  }
  net_->save(cfg_.out_dir + "/stage" + std::to_string(stage_) + ".bin");
  rec_->flush();
  write_file_atomically(cfg_.out_dir + "/stage" + std::to_string(stage_) + ".json", out.dump() + "\n", "stage results");
}
}  // namespace

bool run_csp_worker(const CspWorkerConfig& cfg) {
  auto trainer = std::make_unique<CspStageTrainer>(cfg);
  trainer->run();
  if (!trainer->stopped_early()) return false;
  trainer.release();  // its receivers wait on subnets never sent; the process ends instead
  return true;
}

}  // namespace pw::rt::nas

#include "runtime/nas/csp_trainer.h"

#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <filesystem>
#include <iterator>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/events/clock.h"
#include "core/nas/cache_prediction.h"
#include "core/nas/csp_policy.h"
#include "core/nas/device_cache_plan.h"
#include "core/nas/subnet_log.h"
#include "core/nas/nas_job.h"
#include "core/nas/supernet_partition.h"
#include "core/io/checked_write.h"
#include "runtime/data.h"
#include "runtime/process_group.h"
#include "runtime/rendezvous.h"
#include "runtime/worker.h"
#include "runtime/nas/device_cache.h"
#include "runtime/nas/supernet_modules.h"

namespace pw::rt::nas {
namespace {
using pw::nas::CspActionKind;
using pw::nas::CspStage;
using Clock = std::chrono::steady_clock;

constexpr int kActTag = 1, kGradTag = 2;

// One direction of traffic with a neighbour: tensors of a fixed shape, the
// subnet id riding in the last element. Gloo p2p work cannot be polled
// (isCompleted() only turns true inside wait()), so a receiver thread
// blocks on each recv in turn and queues what arrives; sends are kept
// until drained.
// What the receiver threads of one stage deliver (one queue per channel),
// with one condition variable so the trainer can sleep until anything
// arrives instead of polling.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<at::Tensor> queue[2];
  bool any() const { return !queue[0].empty() || !queue[1].empty(); }
  void wait_until(Clock::time_point until) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_until(lock, until, [&] { return any(); });
  }
};

class Channel {
 public:
  Channel(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int peer, int tag, std::int64_t numel, int expected,
          std::shared_ptr<Inbox> inbox = nullptr, int slot = 0)
      : pg_(std::move(pg)), peer_(peer), tag_(tag), numel_(numel), in_(std::move(inbox)), slot_(slot) {
    if (expected > 0)
      thread_ = std::thread([pg = pg_, in = in_, peer, tag, numel, expected, slot] {
        for (int i = 0; i < expected; ++i) {
          at::Tensor buf = at::empty({numel + 1}, at::kFloat);
          std::vector<at::Tensor> v{buf};
          try {
            pg->recv(v, peer, tag)->wait();
          } catch (...) {
            return;  // the peer failed; the trainer reports its own error or times out
          }
          {
            std::lock_guard<std::mutex> lock(in->mu);
            in->queue[slot].push_back(buf);
          }
          in->cv.notify_all();
        }
      });
  }
  ~Channel() {
    if (!thread_.joinable()) return;
    // Unwinding from an error: the peer may never send again, so do not
    // wait for it (the thread owns what it touches; the process exits).
    if (std::uncaught_exceptions() > 0) thread_.detach();
    else thread_.join();
  }
  void send(int id, const at::Tensor& t) {
    at::Tensor buf = at::empty({numel_ + 1}, at::kFloat);
    buf.narrow(0, 0, numel_).copy_(t.reshape({-1}));
    buf[numel_] = static_cast<float>(id);
    std::vector<at::Tensor> v{buf};
    sends_.push_back({pg_->send(v, peer_, tag_), buf});
  }
  bool poll(int* id, at::Tensor* out) {
    std::lock_guard<std::mutex> lock(in_->mu);
    auto& q = in_->queue[slot_];
    if (q.empty()) return false;
    at::Tensor buf = q.front();
    q.pop_front();
    *id = static_cast<int>(buf[numel_].item<float>());
    *out = buf.narrow(0, 0, numel_);
    return true;
  }
  void drain() {
    for (auto& s : sends_) s.first->wait();
    sends_.clear();
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  int peer_, tag_;
  std::int64_t numel_;
  std::shared_ptr<Inbox> in_;
  int slot_;
  std::thread thread_;
  std::deque<std::pair<c10::intrusive_ptr<c10d::Work>, at::Tensor>> sends_;
};

struct InFlight {
  at::Tensor input, output, loss;
};

std::string read_whole(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + what + " \"" + path + "\"");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The record stream's lines up to a checkpoint must outlive a crash of the
// machine, not only of this process: fsync through a second descriptor
// (fsync acts on the file, whichever descriptor names it).
void sync_file(const std::string& path, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    int e = errno ? errno : EIO;
    if (fd >= 0) ::close(fd);
    throw WriteError(what, path, e);
  }
  ::close(fd);
}

}  // namespace

std::string checkpoint_state_file(const std::string& dir, int rank) {
  return dir + "/stage" + std::to_string(rank) + ".bin";
}
std::string checkpoint_meta_file(const std::string& dir, int rank) {
  return dir + "/stage" + std::to_string(rank) + ".json";
}

namespace {
// ---------------------------------------------------------------- the clock
// The stage's one clock: nanoseconds since the launcher's origin (steady
// clocks are one per host), so every stage's records share one timeline;
// the stage's own training time is two readings of the same clock.
class StageClock {
 public:
  explicit StageClock(std::int64_t origin_ns) : origin_(origin_ns >= 0 ? origin_ns : steady_now_ns()) {}
  std::int64_t now() const { return steady_now_ns() - origin_; }

 private:
  std::int64_t origin_;
};

// ------------------------------------------------------------ the transport
// Activations down and gradients up, to and from the neighbouring stages:
// the stage's only traffic with other processes. What arrives is kept here
// until its action takes it and is announced to the policy.
class StageTransport {
 public:
  StageTransport(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int stage, int stages, std::vector<std::int64_t> shape,
                 int expected)
      : shape_(std::move(shape)), inbox_(std::make_shared<Inbox>()) {
    std::int64_t numel = 1;
    for (auto d : shape_) numel *= d;
    const int s = stage, p = stages;
    if (s > 0) act_in_ = std::make_unique<Channel>(pg, s - 1, kActTag, numel, expected, inbox_, 0);
    if (s + 1 < p) act_out_ = std::make_unique<Channel>(pg, s + 1, kActTag, numel, 0);
    if (s + 1 < p) grad_in_ = std::make_unique<Channel>(pg, s + 1, kGradTag, numel, expected, inbox_, 1);
    if (s > 0) grad_out_ = std::make_unique<Channel>(pg, s - 1, kGradTag, numel, 0);
  }
  // Everything received so far, activations first, into the policy.
  void deliver(CspStage& csp) {
    int id;
    at::Tensor t;
    while (act_in_ && act_in_->poll(&id, &t)) {
      activations_[id] = t.reshape(shape_).clone();
      csp.forward_ready(id);
    }
    while (grad_in_ && grad_in_->poll(&id, &t)) {
      gradients_[id] = t.reshape(shape_).clone();
      csp.backward_ready(id);
    }
  }
  at::Tensor take_activation(int b) { return take(activations_, b); }
  at::Tensor take_gradient(int b) { return take(gradients_, b); }
  // The lowest subnet whose activation waits here (-1: none): the racing baseline's next forward.
  int first_activation() const { return activations_.empty() ? -1 : activations_.begin()->first; }
  void send_activation(int b, const at::Tensor& t) { act_out_->send(b, t); }
  void send_gradient(int b, const at::Tensor& t) { grad_out_->send(b, t); }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  // Only an arrival can make work for an idle stage: sleep until one. The
  // timeout is a safety net, not a poll.
  void sleep_until_arrival() { inbox_->wait_until(Clock::now() + std::chrono::milliseconds(200)); }
  void drain() {
    if (act_out_) act_out_->drain();
    if (grad_out_) grad_out_->drain();
  }

 private:
  static at::Tensor take(std::map<int, at::Tensor>& m, int b) {
    at::Tensor t = m[b];
    m.erase(b);
    return t;
  }
  std::vector<std::int64_t> shape_;
  std::shared_ptr<Inbox> inbox_;
  std::unique_ptr<Channel> act_in_, act_out_, grad_in_, grad_out_;
  std::map<int, at::Tensor> activations_, gradients_;
};

// ------------------------------------------------------------ the recording
// The studio's dependency data (subnet states, wait edges) and the stage's
// events, streamed to the launcher through a file it follows: one JSON
// record a line (SubnetLogWriter), on the stage clock. A resumed stage
// appends to the stream the launcher cut back to the checkpoint, so the
// run's records read as one.
class StageRecorder {
 public:
  StageRecorder(std::string path, bool append, int stage, pw::nas::StageSlots slots, const StageClock& clock)
      : path_(std::move(path)),
        file_(path_, append ? std::ios::app : std::ios::trunc),
        log_(file_),
        stage_(stage),
        slots_(slots),
        clock_(clock) {
    if (!file_) throw WriteError("subnet records", path_, errno ? errno : EIO);
  }
  pw::nas::SubnetLogWriter& log() { return log_; }
  // A compute event of subnet b over the stage's layers.
  void event(pw::EventKind kind, int b, std::int64_t start, std::int64_t end) {
    pw::Event e;
    e.kind = kind;
    e.stage = stage_;
    e.microbatch = b;
    e.start_ns = start;
    e.end_ns = end;
    e.first_layer = slots_.first;
    e.last_layer = slots_.last;
    log_.on_event(e);
  }
  // A device cache load or write-back as the simulator records them:
  // SwapIn / SwapOut, microbatch = the candidate's choice, first_layer = its layer.
  void transfer(bool load, std::int64_t key, std::int64_t start, std::int64_t end, std::int64_t bytes) {
    pw::Event e;
    e.kind = load ? pw::EventKind::SwapIn : pw::EventKind::SwapOut;
    e.stage = stage_;
    e.microbatch = pw::nas::key_choice(key);
    e.start_ns = start;
    e.end_ns = end;
    e.bytes = bytes;
    e.first_layer = e.last_layer = pw::nas::key_layer(key);
    log_.on_event(e);
  }
  // The waits CspStage::next reported, each once while it lasts.
  void waits(const std::vector<pw::nas::SubnetWait>& w) { waits_.report(w, clock_.now(), &log_); }
  void forget(int b) { waits_.forget(b); }
  // A full disk ends the stage when it happens, naming the file (the
  // stream keeps no errno of its own; the failed write's is still set).
  void check() const {
    if (!file_) throw WriteError("subnet records", path_, errno ? errno : EIO);
  }
  // Flushed and on disk (fsync: a checkpoint names this many bytes of it as
  // its part of the run, so they must outlive a machine crash too).
  std::uintmax_t sync() {
    flush();
    sync_file(path_, "subnet records");
    return std::filesystem::file_size(path_);
  }
  void flush() {
    errno = 0;
    file_.flush();
    check();
  }

 private:
  std::string path_;
  std::ofstream file_;
  pw::nas::SubnetLogWriter log_;
  pw::nas::WaitReporter waits_;
  int stage_;
  pw::nas::StageSlots slots_;
  const StageClock& clock_;
};

// ---------------------------------------------------------------- the cache
// The stage's device cache when its budget is below its slice (else
// inactive, every candidate resident): core's plan carried out in sequence
// order (CacheSchedule), loads ahead of need, and the stall a forward
// spends waiting for its step.
class StageCache {
 public:
  StageCache(const pw::nas::NasJob& nj, int stage, int window, CnnSupernet& net, const StageClock& clock,
             StageRecorder& rec)
      : capacity_(pw::nas::stage_capacities(nj)[stage]) {
    if (!pw::nas::stage_cache_active(nj)[stage]) return;
    plan_ = std::make_unique<pw::nas::CachePlan>(pw::nas::plan_device_cache(
        pw::nas::stage_cache_steps(nj.space, nj.sequence, nj.stages[stage]), capacity_,
        pw::nas::SupernetSimInput{}.eviction));
    schedule_ = std::make_unique<pw::nas::CacheSchedule>(plan_.get(), window);
    cache_ = std::make_unique<DeviceCache>(
        net, capacity_, torch::Device(torch::kCPU), [&clock] { return clock.now(); },
        [this, &rec](bool load, std::int64_t key, std::int64_t a, std::int64_t z, std::int64_t bytes) {
          if (!replaying_) rec.transfer(load, key, a, z, bytes);
        });
  }
  // A resumed stage: the plan's steps for subnets < k carried out again on
  // the restored candidates, so the cache holds what the interrupted run's
  // held at its checkpoint (the prefetch stopped at k, see prefetch). The
  // copies are bit copies, so the values are the checkpoint's; the counts
  // add up to the uninterrupted run's, and the records (already in the
  // stream up to the checkpoint) are not repeated.
  void replay_to(int k) {
    if (!cache_ || k == 0) return;
    replaying_ = true;
    for (int b = 0; b < k; ++b) {
      advance(b, b + 1);
      if (!schedule_->ready(b))
        throw std::logic_error("device cache: the plan's step for subnet " + std::to_string(b) +
                               " could not run while replaying to the checkpoint at " + std::to_string(k));
      schedule_->started(b);
      schedule_->released(b);
    }
    replaying_ = false;
  }
  // What a checkpoint saves of the candidates (the cache knows where each one is).
  std::string state_bytes(const CnnSupernet& net) const { return cache_ ? cache_->state_bytes() : net.state_bytes(); }
  bool active() const { return cache_ != nullptr; }
  // Whether forward b may run now (`now`: when the stage chose it). Loads
  // (synchronously on CPU) what it needs; when a victim is still held by an
  // older subnet, b waits like an idle stage: that subnet's update here,
  // after a gradient arrives, releases it. Either way the wait counts as stall.
  bool prepare_forward(int b, std::int64_t now) {
    if (!cache_ || schedule_->ready(b)) return true;
    advance(b, INT_MAX);
    if (stalled_since_ < 0) stalled_since_ = now;
    return schedule_->ready(b);
  }
  // An action starts at `now`: a stall that led to it ends.
  void action_starts(std::int64_t now) {
    if (stalled_since_ < 0) return;
    cache_->add_stall_ns(now - stalled_since_);
    stalled_since_ = -1;
  }
  void started(int b) {
    if (schedule_) schedule_->started(b);
  }
  void released(int b) {
    if (schedule_) schedule_->released(b);
  }
  // Prefetch in sequence order (on a GPU: a copy stream beside compute),
  // the steps of subnets below `limit` only: up to a checkpoint, the cache
  // then holds exactly what the plan's steps before it leave, which a
  // resume rebuilds (replay_to).
  void prefetch(int limit) { advance(-1, limit); }
  // End of the run: every candidate's final weights and state back in the
  // host store; the measured figures (null: no cache).
  nlohmann::json finish() {
    if (!cache_) return nullptr;
    cache_->flush();
    auto f = cache_->figures();
    return {{"uses", f.uses}, {"hits", f.hits}, {"loads", f.loads}, {"evictions", f.evictions},
            {"load_bytes", f.load_bytes}, {"stall_ms", f.stall_ms}, {"capacity_bytes", capacity_},
            {"peak_device_bytes", cache_->peak_device_bytes()}};
  }

 private:
  // Runs cache steps in sequence order as far as the plan allows (all
  // that may run, or until subnet `until`'s candidates are resident), the
  // steps of subnets below `limit` only.
  void advance(int until, int limit) {
    if (!cache_) return;
    while ((until < 0 || !schedule_->ready(until)) && schedule_->next_step() < limit) {
      const pw::nas::CacheStep* step = schedule_->advance();
      if (!step) break;
      cache_->apply(*step);
    }
  }
  std::int64_t capacity_;
  std::unique_ptr<pw::nas::CachePlan> plan_;
  std::unique_ptr<pw::nas::CacheSchedule> schedule_;
  std::unique_ptr<DeviceCache> cache_;
  std::int64_t stalled_since_ = -1;  // idle since then: the forward to run waits for its cache step
  bool replaying_ = false;
};

// -------------------------------------------------------------- the trainer
// One stage of the supernet pipeline: the policy step (CspStage, or the
// racing baseline), forward, backward + update, checkpoints, and the
// stage's results, over the parts above.
class CspStageTrainer {
 public:
  explicit CspStageTrainer(const CspWorkerConfig& cfg);
  void run();

 private:
  std::optional<pw::nas::CspAction> policy_step();
  void forward(int b, std::int64_t start);
  void backward(int b, std::int64_t start);
  void restore(const std::string& dir);
  void plan_checkpoint();
  void save_checkpoint(int k);
  void write_results(double seconds, int idle_waits);

  const CspWorkerConfig& cfg_;
  JobSpec job_;
  pw::nas::NasJob nj_;
  int n_, s_, p_, window_;
  std::unique_ptr<CnnSupernet> net_;
  CandidateOptimizer optimizer_;
  std::unique_ptr<pw::rt::TrainData> data_;  // subnet b trains on microbatch (b, 0)
  std::unique_ptr<CspStage> csp_;
  std::map<int, float> losses_;  // last stage: per subnet (a resumed run: from subnet 0)
  std::map<int, InFlight> live_;
  int start_ = 0;
  int next_checkpoint_ = INT_MAX;
  StageClock clock_;
  std::unique_ptr<StageRecorder> rec_;
  std::unique_ptr<StageCache> cache_;
  std::unique_ptr<StageTransport> transport_;
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
      n_(static_cast<int>(nj_.sequence.size())),
      s_(cfg.rank),
      p_(cfg.world),
      window_(cfg.window > 0 ? cfg.window : nj_.space.window),
      optimizer_{job_.training.optimizer, job_.training.lr},
      clock_(cfg.t0_ns) {
  for (size_t r = 0; r < nj_.stages.size(); ++r)
    if (nj_.stages[r].size() < 1)
      throw std::runtime_error("stage " + std::to_string(r) + " holds no choice layer (the partition gave the head a "
                               "stage of its own); the CPU trainer needs one per stage: use fewer stages");
  net_ = std::make_unique<CnnSupernet>(job_, nj_.space, nj_.stages[s_]);
  pw::nas::check_device_budget(nj_);
  data_ = std::make_unique<pw::rt::TrainData>(job_);
  csp_ = std::make_unique<CspStage>(s_, p_, nj_.stages[s_], &nj_.sequence, window_);
  if (!cfg.resume_from.empty()) restore(cfg.resume_from);
  plan_checkpoint();

  WorkerEnv env;
  env.rank = s_;
  env.world_size = p_;
  env.store_file = cfg.store_file;
  auto store = connect_store(env, std::chrono::seconds(60));
  pg_ = make_gloo_group(store, s_, p_, {.prefix = "nas", .timeout = std::chrono::seconds(120), .threads = 1,
                                        .device = gloo_device(env)});
  transport_ = std::make_unique<StageTransport>(pg_, s_, p_, net_->activation_shape(job_.training.microbatch_size),
                                                n_ - start_);
  rec_ = std::make_unique<StageRecorder>(cfg.out_dir + "/stage" + std::to_string(s_) + ".records.jsonl", start_ > 0, s_,
                                         nj_.stages[s_], clock_);
  // A budget below this stage's slice: candidates live in a host store and
  // a device cache that follows core's plan (the simulator's planned model).
  cache_ = std::make_unique<StageCache>(nj_, s_, window_, *net_, clock_, *rec_);
  cache_->replay_to(start_);  // after restore(): the host store took the checkpoint's values
}

// Where this run starts: subnet 0, or a checkpoint's subnet k with the
// weights, optimizer state and losses of subnets < k. The subnet sequence
// and each subnet's batch are pure functions of (seed, id), so nothing else
// (no RNG stream) needs restoring.
void CspStageTrainer::restore(const std::string& dir) {
  const std::string meta_file = checkpoint_meta_file(dir, s_);
  nlohmann::json meta = nlohmann::json::parse(read_whole(meta_file, "checkpoint"));
  start_ = meta.at("subnet").get<int>();
  const auto& slots = nj_.stages[s_];
  if (meta.at("first_layer").get<int>() != slots.first || meta.at("last_layer").get<int>() != slots.last)
    throw std::runtime_error(meta_file + ": the checkpoint's stage " + std::to_string(s_) + " holds choice layers " +
                             std::to_string(meta.at("first_layer").get<int>()) + ".." +
                             std::to_string(meta.at("last_layer").get<int>()) + ", this job's " +
                             std::to_string(slots.first) + ".." + std::to_string(slots.last) +
                             "; a resume cannot change the partition");
  if (start_ >= n_)
    throw std::runtime_error(meta_file + ": the checkpoint is at subnet " + std::to_string(start_) +
                             ", training.iterations is " + std::to_string(n_) + ": nothing left to train");
  net_->restore_state(read_whole(checkpoint_state_file(dir, s_), "checkpoint"),
                      meta.at("steps").get<std::vector<std::int64_t>>(), checkpoint_state_file(dir, s_));
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
  if (next_checkpoint_ >= n_) next_checkpoint_ = INT_MAX;  // the end of the run saves everything anyway
  csp_->hold_from(next_checkpoint_);
}

// Every subnet < k is finished here and none >= k started (stage 0 holds
// them back): this stage's state is that of k sequential steps. The state
// file goes first, the small JSON last (the launcher counts a stage's part
// done by it), both through the checked writer; the record stream is
// flushed and synced so its first `records_bytes` survive.
void CspStageTrainer::save_checkpoint(int k) {
  const std::string dir = cfg_.checkpoint_dir + "/" + std::to_string(k);
  std::filesystem::create_directories(dir);
  write_file_atomically(checkpoint_state_file(dir, s_), cache_->state_bytes(*net_), "supernet checkpoint");
  const std::uintmax_t records_bytes = rec_->sync();
  nlohmann::json meta{{"subnet", k},
                      {"stage", s_},
                      {"world", p_},
                      {"first_layer", nj_.stages[s_].first},
                      {"last_layer", nj_.stages[s_].last},
                      {"steps", net_->optimizer_steps()},
                      {"hash", std::to_string(net_->hash())},
                      {"records_bytes", records_bytes},
                      {"record_ns", clock_.now()}};
  if (net_->has_head()) {
    std::vector<float> l;
    for (int b = 0; b < k; ++b) l.push_back(losses_.at(b));
    meta["losses"] = l;
  }
  write_file_atomically(checkpoint_meta_file(dir, s_), meta.dump() + "\n", "supernet checkpoint");
}

// The next action: CSP's, or the racing baseline's (same pipeline, no
// conflict test: a ready backward, else the next forward that is there).
std::optional<pw::nas::CspAction> CspStageTrainer::policy_step() {
  if (cfg_.csp) {
    std::vector<pw::nas::SubnetWait> waits;
    auto a = csp_->next(&waits);
    rec_->waits(waits);
    return a;
  }
  auto a = csp_->next();
  if (a && a->kind == CspActionKind::Backward) return a;
  int b = -1;
  if (s_ == 0) {
    const int low = csp_->oldest_unfinished();
    for (int c = low; c < std::min({n_, low + window_, csp_->held_from()}); ++c)
      if (!live_.count(c) && !csp_->finished(c)) {
        b = c;
        break;
      }
  } else {
    b = transport_->first_activation();
  }
  return b >= 0 ? std::optional<pw::nas::CspAction>({CspActionKind::Forward, b}) : std::nullopt;
}

void CspStageTrainer::forward(int b, std::int64_t start) {
  const auto& subnet = nj_.sequence[b];
  csp_->forward_started(b);
  cache_->started(b);
  if (s_ == 0) rec_->log().on_subnet(b, subnet, start);
  rec_->log().on_state(b, pw::nas::SubnetState::Forward, s_, start);
  InFlight f;
  if (s_ == 0) {
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
  rec_->log().on_state(b, pw::nas::SubnetState::Backward, s_, start);
  InFlight& f = live_[b];
  if (net_->has_head()) {
    f.loss.backward();
  } else {
    at::Tensor g = transport_->take_gradient(b);
    if (f.output.requires_grad()) f.output.backward(g);
  }
  if (s_ > 0) transport_->send_gradient(b, f.input.grad().defined() ? f.input.grad() : at::zeros(transport_->shape()));
  const std::int64_t upd = clock_.now();
  rec_->event(pw::EventKind::Backward, b, start, upd);
  rec_->log().on_state(b, pw::nas::SubnetState::Update, s_, upd);
  net_->update(nj_.sequence[b], optimizer_);  // this subnet's own layers, right after its backward
  live_.erase(b);
  csp_->backward_done(b);
  cache_->released(b);
  rec_->forget(b);
  const std::int64_t done = clock_.now();
  rec_->event(pw::EventKind::OptimizerStep, b, upd, done);
  if (s_ == 0) rec_->log().on_state(b, pw::nas::SubnetState::Done, 0, done);  // stage 0 finishes a subnet last
  if (csp_->oldest_unfinished() >= next_checkpoint_) {
    save_checkpoint(next_checkpoint_);
    plan_checkpoint();
  }
}

void CspStageTrainer::run() {
  pg_->barrier()->wait();
  const std::int64_t started = clock_.now();
  int idle_waits = 0;
  while (!csp_->all_done()) {
    rec_->check();
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
    cache_->prefetch(next_checkpoint_);
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
  nlohmann::json out{{"stage", s_},
                     {"world", p_},
                     {"subnets", n_},
                     {"start_subnet", start_},
                     {"seconds", seconds},
                     {"hash", std::to_string(net_->hash())},
                     {"first_layer", nj_.stages[s_].first},
                     {"last_layer", nj_.stages[s_].last},
                     {"idle_waits", idle_waits},
                     {"device_cache", cache_json}};
  if (net_->has_head()) {
    nlohmann::json l = nlohmann::json::array();
    for (int b = 0; b < n_; ++b) l.push_back(losses_[b]);
    out["losses"] = l;
  }
  net_->save(cfg_.out_dir + "/stage" + std::to_string(s_) + ".bin");
  rec_->flush();
  write_file_atomically(cfg_.out_dir + "/stage" + std::to_string(s_) + ".json", out.dump() + "\n", "stage results");
}
}  // namespace

void run_csp_worker(const CspWorkerConfig& cfg) { CspStageTrainer(cfg).run(); }

}  // namespace pw::rt::nas

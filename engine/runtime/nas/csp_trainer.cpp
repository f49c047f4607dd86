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

void run_csp_worker(const CspWorkerConfig& cfg) {
  at::set_num_threads(cfg.threads);
  std::vector<std::string> overrides = cfg.overrides;
  overrides.push_back("pipeline.stages=" + std::to_string(cfg.world));
  overrides.push_back("cluster.devices=" + std::to_string(cfg.world));
  JobSpec job = load_job(cfg.job_file, overrides);
  pw::nas::NasJob nj = pw::nas::prepare_nas_job(job);
  const int n = static_cast<int>(nj.sequence.size());
  const int s = cfg.rank, p = cfg.world;
  for (size_t r = 0; r < nj.stages.size(); ++r)
    if (nj.stages[r].size() < 1)
      throw std::runtime_error("stage " + std::to_string(r) + " holds no choice layer (the partition gave the head a "
                               "stage of its own); the CPU trainer needs one per stage: use fewer stages");
  CnnSupernet net(job, nj.space, nj.stages[s]);
  const CandidateOptimizer optimizer{job.training.optimizer, job.training.lr};
  // A budget below this stage's slice: candidates live in a host store and
  // a device cache that follows core's plan (the simulator's planned model).
  pw::nas::check_device_budget(nj);
  std::unique_ptr<pw::nas::CachePlan> cache_plan;
  std::unique_ptr<pw::nas::CacheSchedule> cache_schedule;
  std::unique_ptr<DeviceCache> cache;
  const std::int64_t capacity = pw::nas::stage_capacities(nj)[s];
  pw::rt::TrainData data(job);  // subnet b trains on microbatch (b, 0)
  int window = cfg.window > 0 ? cfg.window : nj.space.window;
  CspStage csp(s, p, nj.stages[s], &nj.sequence, window);
  if ((cfg.checkpoint_every > 0 || !cfg.resume_from.empty()) && pw::nas::stage_cache_active(nj)[s])
    throw std::invalid_argument("search_space.device_budget_gb: checkpoints and resume are not implemented for a stage "
                                "with a device cache (stage " + std::to_string(s) + "'s budget is below its slice)");
  std::map<int, float> losses;
  // Where this run starts: subnet 0, or a checkpoint's subnet k with the
  // weights, optimizer state and losses of subnets < k. The subnet
  // sequence and each subnet's batch are pure functions of (seed, id), so
  // nothing else (no RNG stream) needs restoring.
  int start = 0;
  if (!cfg.resume_from.empty()) {
    const std::string meta_file = checkpoint_meta_file(cfg.resume_from, s);
    nlohmann::json meta = nlohmann::json::parse(read_whole(meta_file, "checkpoint"));
    start = meta.at("subnet").get<int>();
    if (meta.at("first_layer").get<int>() != nj.stages[s].first || meta.at("last_layer").get<int>() != nj.stages[s].last)
      throw std::runtime_error(meta_file + ": the checkpoint's stage " + std::to_string(s) + " holds choice layers " +
                               std::to_string(meta.at("first_layer").get<int>()) + ".." +
                               std::to_string(meta.at("last_layer").get<int>()) + ", this job's " +
                               std::to_string(nj.stages[s].first) + ".." + std::to_string(nj.stages[s].last) +
                               "; a resume cannot change the partition");
    if (start >= n)
      throw std::runtime_error(meta_file + ": the checkpoint is at subnet " + std::to_string(start) +
                               ", training.iterations is " + std::to_string(n) + ": nothing left to train");
    net.restore_state(read_whole(checkpoint_state_file(cfg.resume_from, s), "checkpoint"),
                      meta.at("steps").get<std::vector<std::int64_t>>(), checkpoint_state_file(cfg.resume_from, s));
    if (net.has_head()) {
      auto l = meta.at("losses").get<std::vector<float>>();
      if (static_cast<int>(l.size()) != start)
        throw std::runtime_error(meta_file + ": " + std::to_string(l.size()) + " losses for " + std::to_string(start) +
                                 " subnets");
      for (int b = 0; b < start; ++b) losses[b] = l[b];
    }
    csp.start_at(start);
  }
  // The next checkpoint: stage 0 admits nothing past it until every stage
  // has drained to it and saved (CspStage::hold_from).
  int next_checkpoint = INT_MAX;
  auto plan_checkpoint = [&] {
    next_checkpoint = cfg.checkpoint_every > 0 ? (csp.oldest_unfinished() / cfg.checkpoint_every + 1) * cfg.checkpoint_every
                                               : INT_MAX;
    if (next_checkpoint >= n) next_checkpoint = INT_MAX;  // the end of the run saves everything anyway
    csp.hold_from(next_checkpoint);
  };
  plan_checkpoint();
  if (pw::nas::stage_cache_active(nj)[s]) {
    cache_plan = std::make_unique<pw::nas::CachePlan>(pw::nas::plan_device_cache(
        pw::nas::stage_cache_steps(nj.space, nj.sequence, nj.stages[s]), capacity, pw::nas::SupernetSimInput{}.eviction));
    cache_schedule = std::make_unique<pw::nas::CacheSchedule>(cache_plan.get(), window);
  }

  WorkerEnv env;
  env.rank = s;
  env.world_size = p;
  env.store_file = cfg.store_file;
  auto store = connect_store(env, std::chrono::seconds(60));
  auto pg = make_gloo_group(store, s, p, {.prefix = "nas", .timeout = std::chrono::seconds(120), .threads = 1,
                                          .device = gloo_device(env)});
  const int batch = job.training.microbatch_size;
  auto shape = net.activation_shape(batch);
  std::int64_t numel = 1;
  for (auto d : shape) numel *= d;
  std::unique_ptr<Channel> act_in, act_out, grad_in, grad_out;
  auto inbox = std::make_shared<Inbox>();
  if (s > 0) act_in = std::make_unique<Channel>(pg, s - 1, kActTag, numel, n - start, inbox, 0);
  if (s + 1 < p) act_out = std::make_unique<Channel>(pg, s + 1, kActTag, numel, 0);
  if (s + 1 < p) grad_in = std::make_unique<Channel>(pg, s + 1, kGradTag, numel, n - start, inbox, 1);
  if (s > 0) grad_out = std::make_unique<Channel>(pg, s - 1, kGradTag, numel, 0);

  std::map<int, at::Tensor> arrived_act, arrived_grad;
  std::map<int, InFlight> live;
  int idle_waits = 0;
  // The studio's dependency data (subnet states, wait edges) and events,
  // streamed to the launcher through a file it follows.
  const std::string record_path = cfg.out_dir + "/stage" + std::to_string(s) + ".records.jsonl";
  // A resumed stage appends to the stream the launcher cut back to the
  // checkpoint, so the run's records read as one.
  std::ofstream record_file(record_path, start > 0 ? std::ios::app : std::ios::trunc);
  if (!record_file) throw WriteError("subnet records", record_path, errno ? errno : EIO);
  pw::nas::SubnetLogWriter records(record_file);
  pw::nas::WaitReporter waits_seen;
  pg->barrier()->wait();
  const std::int64_t t0 = steady_now_ns();
  // Record time: on the launcher's clock origin (steady clocks are one per
  // host), so every stage's records share one timeline.
  const std::int64_t origin = cfg.t0_ns >= 0 ? cfg.t0_ns : t0;
  auto rec_ns = [&] { return steady_now_ns() - origin; };
  if (cache_plan)
    // Loads and write-backs as the simulator records them: SwapIn / SwapOut,
    // microbatch = the candidate's choice, first_layer = its layer.
    cache = std::make_unique<DeviceCache>(
        net, capacity, torch::Device(torch::kCPU), rec_ns,
        [&](bool load, std::int64_t key, std::int64_t a, std::int64_t z, std::int64_t bytes) {
          pw::Event e;
          e.kind = load ? pw::EventKind::SwapIn : pw::EventKind::SwapOut;
          e.stage = s;
          e.microbatch = pw::nas::key_choice(key);
          e.start_ns = a;
          e.end_ns = z;
          e.bytes = bytes;
          e.first_layer = e.last_layer = pw::nas::key_layer(key);
          records.on_event(e);
        });
  // Runs cache steps in sequence order as far as the plan allows (all
  // that may run, or until subnet `until`'s candidates are resident).
  auto advance_cache = [&](int until) {
    if (!cache) return;
    while (until < 0 || !cache_schedule->ready(until)) {
      const pw::nas::CacheStep* step = cache_schedule->advance();
      if (!step) break;
      cache->apply(*step);
    }
  };
  std::int64_t stalled_since = -1;  // idle since then: the forward to run waits for its cache step
  auto event = [&](pw::EventKind kind, int b, std::int64_t a, std::int64_t z) {
    pw::Event e;
    e.kind = kind;
    e.stage = s;
    e.microbatch = b;
    e.start_ns = a;
    e.end_ns = z;
    e.first_layer = nj.stages[s].first;
    e.last_layer = nj.stages[s].last;
    records.on_event(e);
  };

  // Every subnet < k is finished here and none >= k started (stage 0 holds
  // them back): this stage's state is that of k sequential steps. The
  // state file goes first, the small JSON last (the launcher counts a
  // stage's part done by it), both through the checked writer; the record
  // stream is flushed and synced so its first `records_bytes` survive.
  auto save_checkpoint = [&](int k) {
    const std::string dir = cfg.checkpoint_dir + "/" + std::to_string(k);
    std::filesystem::create_directories(dir);
    write_file_atomically(checkpoint_state_file(dir, s), net.state_bytes(), "supernet checkpoint");
    errno = 0;
    record_file.flush();
    if (!record_file) throw WriteError("subnet records", record_path, errno ? errno : EIO);
    sync_file(record_path, "subnet records");
    nlohmann::json meta{{"subnet", k},
                        {"stage", s},
                        {"world", p},
                        {"first_layer", nj.stages[s].first},
                        {"last_layer", nj.stages[s].last},
                        {"steps", net.optimizer_steps()},
                        {"hash", std::to_string(net.hash())},
                        {"records_bytes", std::filesystem::file_size(record_path)},
                        {"record_ns", rec_ns()}};
    if (net.has_head()) {
      std::vector<float> l;
      for (int b = 0; b < k; ++b) l.push_back(losses.at(b));
      meta["losses"] = l;
    }
    write_file_atomically(checkpoint_meta_file(dir, s), meta.dump() + "\n", "supernet checkpoint");
  };

  while (!csp.all_done()) {
    // A full disk ends the stage when it happens, naming the file (the
    // stream keeps no errno of its own; the failed write's is still set).
    if (!record_file) throw WriteError("subnet records", record_path, errno ? errno : EIO);
    int id;
    at::Tensor t;
    while (act_in && act_in->poll(&id, &t)) {
      arrived_act[id] = t.reshape(shape).clone();
      csp.forward_ready(id);
    }
    while (grad_in && grad_in->poll(&id, &t)) {
      arrived_grad[id] = t.reshape(shape).clone();
      csp.backward_ready(id);
    }
    std::optional<pw::nas::CspAction> a;
    if (cfg.csp) {
      std::vector<pw::nas::SubnetWait> waits;
      a = csp.next(&waits);
      waits_seen.report(waits, rec_ns(), &records);
    } else {
      // The racing baseline: same pipeline, no conflict test.
      a = csp.next();
      if (!a || a->kind != CspActionKind::Backward) {
        int b = -1;
        if (s == 0) {
          for (int c = csp.oldest_unfinished(); c < std::min({n, csp.oldest_unfinished() + window, csp.held_from()}); ++c)
            if (!live.count(c) && !csp.finished(c)) { b = c; break; }
        } else if (!arrived_act.empty()) {
          b = arrived_act.begin()->first;
        }
        a = b >= 0 ? std::optional<pw::nas::CspAction>({CspActionKind::Forward, b}) : std::nullopt;
      }
    }
    std::int64_t stall_start = rec_ns();
    if (a && cache && a->kind == CspActionKind::Forward && !cache_schedule->ready(a->subnet)) {
      // Load (synchronously on CPU) what this forward needs; when a victim
      // is still held by an older subnet, wait like an idle stage: that
      // subnet's update here, after a gradient arrives, releases it.
      advance_cache(a->subnet);
      if (cache_schedule->ready(a->subnet)) {
        if (stalled_since < 0) stalled_since = stall_start;
      } else {
        if (stalled_since < 0) stalled_since = stall_start;
        a.reset();
      }
    }
    if (!a) {
      // Only an arrival can make work here (own actions were taken), so
      // sleep until one; the timeout is a safety net, not a poll.
      idle_waits++;
      inbox->wait_until(Clock::now() + std::chrono::milliseconds(200));
      continue;
    }
    const int b = a->subnet;
    const auto& subnet = nj.sequence[b];
    std::int64_t rec_start = rec_ns();
    if (stalled_since >= 0) {
      cache->add_stall_ns(rec_start - stalled_since);
      stalled_since = -1;
    }
    if (a->kind == CspActionKind::Forward) {
      csp.forward_started(b);
      if (cache_schedule) cache_schedule->started(b);
      if (s == 0) records.on_subnet(b, subnet, rec_start);
      records.on_state(b, pw::nas::SubnetState::Forward, s, rec_start);
      InFlight f;
      if (s == 0) {
        f.input = net.stem(data.microbatch(b, 0).input);
      } else {
        f.input = arrived_act[b];
        arrived_act.erase(b);
        f.input.set_requires_grad(true);
      }
      f.output = net.layers(subnet, f.input);
      if (net.has_head()) {
        f.loss = loss(net.head(f.output), data.microbatch(b, 0).target);
        losses[b] = f.loss.item<float>();
        csp.backward_ready(b);
      } else {
        act_out->send(b, f.output.detach());
      }
      live[b] = std::move(f);
      event(pw::EventKind::Forward, b, rec_start, rec_ns());
    } else {
      csp.backward_started(b);
      records.on_state(b, pw::nas::SubnetState::Backward, s, rec_start);
      InFlight& f = live[b];
      if (net.has_head()) {
        f.loss.backward();
      } else {
        at::Tensor g = arrived_grad[b];
        arrived_grad.erase(b);
        if (f.output.requires_grad()) f.output.backward(g);
      }
      if (s > 0) {
        at::Tensor gi = f.input.grad().defined() ? f.input.grad() : at::zeros(shape);
        grad_out->send(b, gi);
      }
      std::int64_t upd = rec_ns();
      event(pw::EventKind::Backward, b, rec_start, upd);
      records.on_state(b, pw::nas::SubnetState::Update, s, upd);
      net.update(subnet, optimizer);  // this subnet's own layers, right after its backward
      live.erase(b);
      csp.backward_done(b);
      if (cache_schedule) cache_schedule->released(b);
      waits_seen.forget(b);
      std::int64_t done = rec_ns();
      event(pw::EventKind::OptimizerStep, b, upd, done);
      if (s == 0) records.on_state(b, pw::nas::SubnetState::Done, 0, done);  // stage 0 finishes a subnet last
      if (csp.oldest_unfinished() >= next_checkpoint) {
        save_checkpoint(next_checkpoint);
        plan_checkpoint();
      }
    }
    advance_cache(-1);  // prefetch in sequence order (on a GPU: a copy stream beside compute)
  }
  if (act_out) act_out->drain();
  if (grad_out) grad_out->drain();
  double seconds = static_cast<double>(steady_now_ns() - t0) / 1e9;
  pg->barrier()->wait();
  nlohmann::json cache_json = nullptr;
  if (cache) {
    cache->flush();  // every candidate's final weights and state back in the host store
    auto f = cache->figures();
    cache_json = {{"uses", f.uses}, {"hits", f.hits}, {"loads", f.loads}, {"evictions", f.evictions},
                  {"load_bytes", f.load_bytes}, {"stall_ms", f.stall_ms}, {"capacity_bytes", capacity},
                  {"peak_device_bytes", cache->peak_device_bytes()}};
  }

  nlohmann::json out{{"stage", s},
                     {"world", p},
                     {"subnets", n},
                     {"start_subnet", start},
                     {"seconds", seconds},
                     {"hash", std::to_string(net.hash())},
                     {"first_layer", nj.stages[s].first},
                     {"last_layer", nj.stages[s].last},
                     {"idle_waits", idle_waits},
                     {"device_cache", cache_json}};
  if (net.has_head()) {
    nlohmann::json l = nlohmann::json::array();
    for (int b = 0; b < n; ++b) l.push_back(losses[b]);
    out["losses"] = l;
  }
  // The trained candidates, for the evolutionary search (supernet_search.h).
  net.save(cfg.out_dir + "/stage" + std::to_string(s) + ".bin");
  // The stream keeps no errno of its own; the failed write's is still set.
  errno = 0;
  record_file.flush();
  if (!record_file) throw WriteError("subnet records", record_path, errno ? errno : EIO);
  write_file_atomically(cfg.out_dir + "/stage" + std::to_string(s) + ".json", out.dump() + "\n", "stage results");
}

}  // namespace pw::rt::nas

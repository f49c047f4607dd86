#include "runtime/migration/worker_agent.h"
#include "runtime/store_bytes.h"

#include "core/events/clock.h"
#include "core/events/event_kinds.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "core/spec/messaging_spec.h"
#include "runtime/messenger.h"
#include "runtime/migration/keys.h"
#include "runtime/migration/layer_state.h"
#include "runtime/protocol.h"
#include "runtime/replica_layout.h"

namespace pw::rt::migration {
namespace {


// Tags of their own, above the training (< 2^28) and evaluation (2^28 + v) ranges.
int state_tag(int version, int layer, int part) { return (1 << 29) + (version % 256) * 65536 + layer * 2 + part; }

// Measures compute (forward and backward events, a split backward's B and W too) and, from slowdown_from on,
// makes this device `factor` times slower by sleeping (factor - 1) x each
// action's measured time right after it.
class MeasuringSink final : public EventSink {
 public:
  MeasuringSink(EventSink* next, double factor, std::int64_t from) : next_(next), factor_(factor), from_(from) {}
  void on_event(const Event& e) override {
    if (is_compute(e.kind)) {
      std::int64_t d = e.end_ns - e.start_ns;
      if (factor_ > 1 && iteration_ >= from_) {
        auto extra = static_cast<std::int64_t>((factor_ - 1) * static_cast<double>(d));
        std::this_thread::sleep_for(std::chrono::nanoseconds(extra));
        d = steady_now_ns() - e.start_ns;
      }
      compute_ns_ += d;
    }
    if (next_) next_->on_event(e);
  }
  void start(std::int64_t it) {
    iteration_ = it;
    compute_ns_ = 0;
  }
  std::int64_t compute_ns() const { return compute_ns_; }

 private:
  EventSink* next_;
  double factor_;
  std::int64_t from_;
  std::int64_t iteration_ = 0;
  std::int64_t compute_ns_ = 0;
};

}  // namespace

struct WorkerAgent::Impl {
  JobSpec job;
  Plan plan;
  const Schedule& schedule;
  int rank, world;  // the stage, and the pipeline's stages (one replica's)
  c10::intrusive_ptr<c10d::Store> store;
  StageExecutor::PG pg;
  TrainData& data;
  EventSink* log;
  ReplicaSet replicas;
  int worker;  // WORLD rank (stage x replicas + replica): names this worker's store keys
  Settings settings;
  std::unique_ptr<MeasuringSink> measuring;
  std::int64_t scheduled = 0;  // rank 0: online proposals already given an iteration
  std::int64_t iter_start = 0;

  Impl(const JobSpec& j, const Plan& p, const Schedule& s, int r, c10::intrusive_ptr<c10d::Store> st,
       StageExecutor::PG g, TrainData& d, EventSink* l, ReplicaSet rs)
      : job(j), plan(p), schedule(s), rank(r), world(s.devices()), store(std::move(st)), pg(std::move(g)), data(d),
        log(l), replicas(std::move(rs)), worker(WorkerRole{r, replicas.index, replicas.count}.rank()) {
    settings = job.runtime;
    if (!settings.present) return;
    double f = rank < static_cast<int>(settings.slowdown.size()) ? settings.slowdown[rank] : 1.0;
    measuring = std::make_unique<MeasuringSink>(log, f, settings.slowdown_from);
  }

  void before(std::int64_t it, StageExecutor& stage) {
    if (!settings.present) return;
    iter_start = steady_now_ns();
    measuring->start(it);
    // Rank 0 finishes every iteration last and starts the next one first,
    // and no other rank can finish iteration `it` before rank 0's sends of
    // `it`: a key written now for it + 1 is seen by every rank in time.
    // With replicas, stage 0 of replica 0 alone schedules: another
    // replica's worker of stage s ends iteration `it` with the all-reduce
    // that waits for replica 0's stage s, which waited for replica 0's
    // stage 0 (its activations), so it too has passed this point.
    if (rank == 0 && replicas.index == 0 && settings.replan) {
      std::int64_t n = store->add(keys::kProposals, 0);
      if (n > scheduled) {
        scheduled = n;
        store->set(keys::at(it + 1), store->get(keys::proposal(n)));
      }
    }
    if (store->check({keys::at(it)})) migrate(std::stoi(from_bytes(store->get(keys::at(it)))), it, stage);
  }

  void after(std::int64_t it, StageExecutor& stage) {
    if (!settings.present) return;
    double compute_ms = measuring->compute_ns() * 1e-6 / schedule.microbatches();
    nlohmann::json j{{"compute_ms", compute_ms},
                     {"iter_ms", (steady_now_ns() - iter_start) * 1e-6},
                     {"peak", stage.memory().peak_bytes()},
                     {"budget", stage.memory().budget()},
                     {"t_ns", steady_now_ns()}};
    store->set(keys::stat(it, worker), to_bytes(j.dump()));
  }

  int device_of(const Plan& p, int layer) const { return p.stage_of(layer) % world; }

  void migrate(int version, std::int64_t it, StageExecutor& stage) {
    std::int64_t t0 = steady_now_ns();
    auto doc = nlohmann::json::parse(from_bytes(store->get(keys::plan(version))));
    Plan next = plan_from_json(doc.at("plan"));
    validate_plan(next, plan.layer_count());
    // Phase 1 (prepare): the old owner sends each moving layer's state to
    // the new owner and keeps its own copy until the commit. Sizes first,
    // then bytes, each exchange one group posted in layer order on both
    // ends: every rank posts its sends and receives together, so where
    // tags are ignored (ordered messaging, NCCL) the k-th send meets the
    // k-th receive and neither direction waits behind the other.
    Messenger messenger(pg, messaging_mode_from_string(cluster_messaging(job)).value());
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    std::map<int, std::vector<at::Tensor>> out_size, in_size;  // layer -> its size message
    std::map<int, std::vector<at::Tensor>> bytes;              // layer -> the state's bytes, either way
    std::int64_t sent = 0, received = 0;
    messenger.begin_group();
    for (int l = 0; l < plan.layer_count(); ++l) {
      int a = device_of(plan, l), b = device_of(next, l);
      if (a == b || (a != rank && b != rank)) continue;
      if (a == rank) {
        std::string blob = export_layer(stage, l);
        at::Tensor t = at::empty({static_cast<std::int64_t>(blob.size())}, at::kByte);
        std::memcpy(t.data_ptr(), blob.data(), blob.size());
        bytes[l] = {t};
        out_size[l] = {at::tensor({t.numel()}, at::kLong)};
        works.push_back(messenger.send(out_size[l], b, state_tag(version, l, 0)));
      } else {
        in_size[l] = {at::empty({1}, at::kLong)};
        works.push_back(messenger.recv(in_size[l], a, state_tag(version, l, 0)));
      }
    }
    messenger.end_group();
    for (auto& w : works) w->wait();
    works.clear();
    messenger.begin_group();
    for (int l = 0; l < plan.layer_count(); ++l) {
      int a = device_of(plan, l), b = device_of(next, l);
      if (a == b || (a != rank && b != rank)) continue;
      if (a == rank) {
        works.push_back(messenger.send(bytes[l], b, state_tag(version, l, 1)));
        sent += bytes[l][0].numel();
      } else {
        bytes[l] = {at::empty({in_size[l][0].item<std::int64_t>()}, at::kByte)};
        works.push_back(messenger.recv(bytes[l], a, state_tag(version, l, 1)));
      }
    }
    messenger.end_group();
    for (auto& w : works) w->wait();
    std::map<int, std::string> blobs;
    for (auto& [l, size] : in_size) {
      const at::Tensor& t = bytes.at(l)[0];
      blobs[l] = std::string(static_cast<const char*>(t.data_ptr()), t.numel());
      received += t.numel();
    }
    // Test hook: die while prepared (replica 0 of that stage).
    if (settings.fail_in_migration == rank && replicas.index == 0) std::raise(SIGKILL);
    // The new owner builds every layer from the job seed (StageExecutor does)
    // and only loads state: received layers, and the layers it keeps.
    // The process's bytes before any model existed: the new stage's account
    // starts from there once the old stage is freed (not from now, which
    // still counts the old stage).
    std::int64_t baseline = stage.memory().baseline();
    // The same replica group: its gradient buckets are cut anew from the
    // new plan's layers, by the same rule on every replica (gradient_sync.h).
    StageExecutor fresh(job, next, schedule, rank, pg, data, measuring.get(), stage.placement(), replicas);
    for (int l = 0; l < next.layer_count(); ++l) {
      if (device_of(next, l) != rank) continue;
      if (device_of(plan, l) == rank)
        copy_layer(stage, fresh, l);
      else
        import_layer(fresh, l, blobs.at(l), job.training.optimizer);
    }
    std::int64_t prepared = steady_now_ns();
    store->set(keys::ack(version, worker),
               to_bytes(nlohmann::json{{"iteration", it}, {"sent", sent}, {"received", received},
                                       {"prepare_ms", (prepared - t0) * 1e-6}, {"start_ns", t0}}
                            .dump()));
    // Phase 2: switch only on the coordinator's commit; an abort (a peer
    // died) leaves the old owner's copy as the only one and ends the run.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!store->check({keys::commit(version)})) {
      if (store->check({pw::rt::keys::kAbort})) std::_Exit(3);
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("migration to plan version " + std::to_string(version) +
                                 ": no commit from the coordinator within 60 s");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    stage.swap(fresh);  // `fresh` now holds the old stage and frees it
    stage.memory().set_baseline(baseline);
    plan = next;
    std::int64_t t1 = steady_now_ns();
    store->set(keys::done(version, worker),
               to_bytes(nlohmann::json{{"stall_ms", (t1 - t0) * 1e-6}, {"end_ns", t1}}.dump()));
    iter_start = steady_now_ns();  // the stall is reported separately from the iteration's time
  }
};

WorkerAgent::WorkerAgent(const JobSpec& job, const Plan& plan, const Schedule& schedule, int rank,
                         c10::intrusive_ptr<c10d::Store> store, StageExecutor::PG pg, TrainData& data, EventSink* log,
                         ReplicaSet replicas)
    : impl_(std::make_unique<Impl>(job, plan, schedule, rank, std::move(store), std::move(pg), data, log,
                                   std::move(replicas))) {}
WorkerAgent::~WorkerAgent() = default;
EventSink* WorkerAgent::sink() { return impl_->measuring ? impl_->measuring.get() : impl_->log; }
void WorkerAgent::before_iteration(std::int64_t it, StageExecutor& stage) { impl_->before(it, stage); }
void WorkerAgent::after_iteration(std::int64_t it, StageExecutor& stage) { impl_->after(it, stage); }
const Plan* WorkerAgent::plan() const { return &impl_->plan; }

}  // namespace pw::rt::migration

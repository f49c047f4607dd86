#include "runtime/migration/controller.h"
#include "runtime/store_bytes.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <sstream>

#include "core/plan/planner.h"
#include "runtime/coordinator.h"
#include "runtime/migration/keys.h"

namespace pw::rt::migration {
namespace {


nlohmann::json ranges(const Plan& p) {
  auto a = nlohmann::json::array();
  for (const auto& s : p.stages) a.push_back({s.first_layer, s.last_layer});
  return a;
}

double or_null(double x) { return x; }

// Layers whose memory policy differs: [layer, from, to].
nlohmann::json policy_changes(const Plan& a, const Plan& b) {
  auto out = nlohmann::json::array();
  for (size_t l = 0; l < a.policy.size() && l < b.policy.size(); ++l)
    if (a.policy[l] != b.policy[l]) out.push_back({l, to_string(a.policy[l]), to_string(b.policy[l])});
  return out;
}

}  // namespace

nlohmann::json MigrationEvent::to_json() const {
  auto mv = nlohmann::json::array();
  for (const auto& m : moves) mv.push_back({{"layer", m.layer}, {"from", m.from_stage}, {"to", m.to_stage}, {"bytes", m.bytes}});
  nlohmann::json j{{"version", version},         {"reason", reason},
                   {"detail", detail},           {"iteration", iteration},
                   {"from", ranges(from)},       {"to", ranges(to)},
                   {"moves", mv},                {"bytes", bytes},
                   {"policy_changes", policy_changes(from, to)},
                   {"stall_ms", stall_ms},       {"prepare_ms", prepare_ms},
                   {"iteration_ms_before", iteration_ms_before},
                   {"slowdown", slowdown}};
  // NaN is not JSON: unknown figures are null.
  j["iteration_ms_after"] = std::isnan(iteration_ms_after) ? nlohmann::json() : nlohmann::json(iteration_ms_after);
  j["predicted_gain"] = std::isnan(predicted_gain) ? nlohmann::json() : nlohmann::json(predicted_gain);
  j["measured_gain"] = std::isnan(measured_gain) ? nlohmann::json() : nlohmann::json(or_null(measured_gain));
  return j;
}

std::vector<Migration> MigrationEvent::records() const {
  std::vector<Migration> out;
  for (const auto& m : moves) {
    Migration r;
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    r.layer = m.layer;
    r.from_stage = m.from_stage;
    r.to_stage = m.to_stage;
    r.bytes = static_cast<std::int64_t>(m.bytes);
    r.plan_version = version;
    out.push_back(r);
  }
  return out;
}

Controller::Controller(const PreparedJob& job, c10::intrusive_ptr<c10d::Store> store, RunObserver* observer, bool quiet)
    : job_(job), store_(std::move(store)), obs_(observer), quiet_(quiet), plan_(job.plan),
      world_(job.schedule->devices()), replicas_(std::max(1, job.job.parallel.data)) {
  settings_ = job.job.runtime;
  check_runtime_layers(settings_, job.profile.size());  // a measured profile may differ from the analytic one
  trigger_ = ReplanTrigger(settings_.trigger);
  if (plan_.predicted.empty()) {
    PlanRequest req = plan_request(job_.job, job_.profile);
    evaluate_plan(req, plan_);
  }
}

void Controller::publish() {
  if (!enabled()) return;
  Plan base = plan_;
  for (const auto& m : settings_.migrate) {
    Pending p;
    p.version = ++version_;
    p.plan = m.stages.empty() ? base : with_stages(base, m.stages);
    if (!m.policy.empty()) p.plan.policy = m.policy;
    p.reason = "scripted";
    p.detail = "runtime.migrate at iteration " + std::to_string(m.iteration);
    p.iteration = m.iteration;
    store_->set(keys::plan(p.version), to_bytes(nlohmann::json{{"plan", pw::to_json(p.plan)}, {"reason", p.reason}}.dump()));
    store_->set(keys::at(m.iteration), to_bytes(std::to_string(p.version)));
    base = p.plan;
    pending_.push_back(std::move(p));
  }
}

bool Controller::busy() const {
  for (const auto& p : pending_)
    if (p.iteration < 0 || p.iteration <= next_stat_ + 1) return true;
  return false;
}

std::string Controller::failure_context() {
  if (enabled()) read_stats();
  for (const auto& p : pending_) {
    if (p.iteration < 0 || p.iteration > next_stat_ + 1) continue;
    std::ostringstream os;
    os << " (during live migration to plan version " << p.version << " at iteration " << p.iteration
       << (p.committed ? ", committed" : ", not committed: the old owners keep every layer") << "; moving layers";
    for (const auto& m : migration_moves(plan_, p.plan, job_.profile)) os << " " << m.layer << ":" << m.from_stage << "->" << m.to_stage;
    os << ")";
    return os.str();
  }
  return "";
}

void Controller::poll() {
  if (!enabled()) return;
  if (std::int64_t n = store_->add(keys::kRebalance, 0); n > rebalance_seen_) {
    rebalance_seen_ = n;
    trigger_.request_manual();
  }
  read_stats();
  for (auto& p : pending_) advance(p);
  std::erase_if(pending_, [](const Pending& p) { return p.version < 0; });
}

void Controller::read_stats() {
  std::int64_t iterations = job_.job.training.iterations;
  while (next_stat_ < iterations) {
    // One key per worker (WORLD rank = stage x replicas + replica); a
    // stage's replicas run the same layers, so the stage is as slow (and
    // as full) as its slowest replica: the planner sees that.
    std::vector<std::string> ks;
    for (int r = 0; r < world_ * replicas_; ++r) ks.push_back(keys::stat(next_stat_, r));
    if (!store_->check(ks)) return;
    std::vector<StageObservation> obs(world_);
    nlohmann::json entry{{"iteration", next_stat_}};
    auto compute = nlohmann::json::array();
    double iter_ms = 0;
    std::int64_t t_ns = 0;
    for (int r = 0; r < world_ * replicas_; ++r) {
      auto j = nlohmann::json::parse(from_bytes(store_->get(ks[r])));
      StageObservation& o = obs[r / replicas_];
      o.compute_ms = std::max(o.compute_ms, j.at("compute_ms").get<double>());
      o.peak_memory_bytes = std::max(o.peak_memory_bytes, j.at("peak").get<std::uint64_t>());
      o.memory_budget_bytes = j.at("budget").get<std::uint64_t>();
      iter_ms = std::max(iter_ms, j.at("iter_ms").get<double>());
      t_ns = std::max(t_ns, j.at("t_ns").get<std::int64_t>());
      store_->deleteKey(ks[r]);
    }
    for (const auto& o : obs) compute.push_back(o.compute_ms);
    entry["iter_ms"] = iter_ms;
    entry["compute_ms"] = compute;
    entry["t_ns"] = t_ns;  // the iteration's end on the last worker (steady clock, shared by local processes)
    timeline_.push_back(entry);
    if (static_cast<std::int64_t>(iter_ms_.size()) <= next_stat_) iter_ms_.resize(next_stat_ + 1, NAN);
    iter_ms_[next_stat_] = iter_ms;
    std::int64_t it = next_stat_++;
    // Measured gain of earlier migrations, once enough iterations ran after them.
    for (auto& e : events_) {
      if (!std::isnan(e.iteration_ms_after) || it < e.iteration + settings_.measure_iterations) continue;
      double s = 0;
      for (std::int64_t k = e.iteration; k < e.iteration + settings_.measure_iterations; ++k) s += iter_ms_[k];
      e.iteration_ms_after = s / settings_.measure_iterations;
      if (e.iteration_ms_before > 0) e.measured_gain = e.iteration_ms_before / e.iteration_ms_after - 1;
      if (!quiet_ && e.iteration_ms_before > 0) {
        std::fprintf(stderr, "migration v%d: measured %.2f ms/iteration before, %.2f after (gain %+.1f%%)\n", e.version,
                     e.iteration_ms_before, e.iteration_ms_after, 100 * e.measured_gain);
      }
      report_event(e);
    }
    if (it == settings_.rebalance_at) trigger_.request_manual();
    if (!settings_.replan || !pending_.empty()) continue;
    if (auto d = trigger_.observe(static_cast<int>(it), obs)) replan(it, obs, *d);
  }
}

void Controller::replan(std::int64_t it, const std::vector<StageObservation>& obs, const ReplanDecision& d) {
  trigger_.replanned(static_cast<int>(it));
  std::vector<double> predicted;
  for (const auto& s : plan_.predicted) predicted.push_back(s.time_ms);
  std::vector<double> slow = observed_slowdown(predicted, obs);
  // Only ratios between devices matter to the partition; the fastest is 1.
  double least = *std::min_element(slow.begin(), slow.end());
  for (double& f : slow) f /= least;
  PlanRequest req = plan_request(job_.job, job_.profile);
  req.slowdown = slow;
  Plan current = plan_;
  evaluate_plan(req, current);
  req.current = &plan_;
  Plan next = run_planner(settings_.planner, req);
  double gain = current.throughput_samples_per_s > 0 ? next.throughput_samples_per_s / current.throughput_samples_per_s - 1 : 0;
  bool manual = d.reason == ReplanReason::Manual;
  // A new partition, or only new memory policies (keep / recompute /
  // swap per layer): both switch through the same migration.
  bool moves = layers_moved(plan_, next) > 0 || next.policy != plan_.policy;
  if (!quiet_)
    std::fprintf(stderr, "replan at iteration %lld (%s: %s): predicted gain %+.1f%%, %d layers would move%s\n",
                 static_cast<long long>(it), to_string(d.reason), d.detail.c_str(), 100 * gain,
                 layers_moved(plan_, next),
                 !next.feasible ? " - infeasible, kept" : !moves ? " - same plan, kept"
                 : (manual || trigger_.worth_it(current.throughput_samples_per_s, next.throughput_samples_per_s))
                     ? ""
                     : " - below runtime.replan.min_gain, kept");
  // The workers run parallel.data replicas of one partition: a plan that
  // changed the replication is not one they can switch to.
  if (next.data_parallel != plan_.data_parallel || !next.replicas.empty()) {
    if (!quiet_) std::fprintf(stderr, "replan at iteration %lld: the planner changed the replication, kept\n",
                              static_cast<long long>(it));
    return;
  }
  if (!next.feasible || !moves) return;
  if (!manual && !trigger_.worth_it(current.throughput_samples_per_s, next.throughput_samples_per_s)) return;
  Pending p;
  p.version = ++version_;
  p.plan = next;
  p.reason = to_string(d.reason);
  p.detail = d.detail;
  p.predicted_gain = gain;
  p.slowdown = slow;
  store_->set(keys::plan(p.version), to_bytes(nlohmann::json{{"plan", pw::to_json(next)}, {"reason", p.reason}}.dump()));
  ++proposals_;
  store_->set(keys::proposal(proposals_), to_bytes(std::to_string(p.version)));
  store_->add(keys::kProposals, 1);
  pending_.push_back(std::move(p));
}

void Controller::advance(Pending& p) {
  std::vector<std::string> acks, dones;
  for (int r = 0; r < world_ * replicas_; ++r) {  // every replica's workers
    acks.push_back(keys::ack(p.version, r));
    dones.push_back(keys::done(p.version, r));
  }
  if (!p.committed) {
    if (!store_->check(acks)) return;
    // Every worker holds the new plan's state: switch.
    store_->set(keys::commit(p.version), to_bytes("1"));
    p.committed = true;
  }
  if (!store_->check(dones)) return;
  MigrationEvent e;
  e.version = p.version;
  e.reason = p.reason;
  e.detail = p.detail;
  e.from = plan_;
  e.to = p.plan;
  e.moves = migration_moves(plan_, p.plan, job_.profile);
  e.predicted_gain = p.predicted_gain;
  e.slowdown = p.slowdown;
  e.start_ns = 0;
  for (int r = 0; r < world_ * replicas_; ++r) {
    auto a = nlohmann::json::parse(from_bytes(store_->get(acks[r])));
    auto d = nlohmann::json::parse(from_bytes(store_->get(dones[r])));
    e.iteration = a.at("iteration").get<std::int64_t>();
    e.bytes += a.at("sent").get<std::int64_t>();
    e.prepare_ms = std::max(e.prepare_ms, a.at("prepare_ms").get<double>());
    // The last worker to reach the boundary (stage 0, which drains last)
    // starts the critical path; earlier ones would wait for it anyway.
    e.start_ns = std::max(e.start_ns, a.at("start_ns").get<std::int64_t>());
    e.end_ns = std::max(e.end_ns, d.at("end_ns").get<std::int64_t>());
  }
  e.stall_ms = (e.end_ns - e.start_ns) * 1e-6;
  int n = 0;
  for (std::int64_t k = std::max<std::int64_t>(0, e.iteration - settings_.measure_iterations); k < e.iteration; ++k)
    if (k < static_cast<std::int64_t>(iter_ms_.size()) && !std::isnan(iter_ms_[k])) {
      e.iteration_ms_before += iter_ms_[k];
      ++n;
    }
  if (n) e.iteration_ms_before /= n;
  // Nominal predictions (no slowdown): observed_slowdown divides by them,
  // so a plan evaluated under the slowdown would hide it and swing back.
  plan_ = p.plan;
  plan_.predicted.clear();
  PlanRequest nominal = plan_request(job_.job, job_.profile);
  evaluate_plan(nominal, plan_);
  if (!quiet_) {
    std::ostringstream os;
    os << "migration v" << e.version << " (" << e.reason << ") at iteration " << e.iteration << ":";
    for (const auto& m : e.moves) os << " layer " << m.layer << " " << m.from_stage << "->" << m.to_stage;
    os << ", " << e.bytes << " bytes, stall " << e.stall_ms << " ms";
    if (!std::isnan(e.predicted_gain)) os << ", predicted gain " << 100 * e.predicted_gain << "%";
    std::cerr << os.str() << "\n";
  }
  events_.push_back(e);
  p.version = -1;  // done
}

void Controller::report_event(MigrationEvent& e) {
  if (e.reported) return;
  e.reported = true;
  if (obs_) obs_->on_migration(e.records(), e.to_json());
}

void Controller::finish() {
  for (auto& e : events_) report_event(e);
}

nlohmann::json Controller::report() const {
  auto ev = nlohmann::json::array();
  for (const auto& e : events_) ev.push_back(e.to_json());
  return {{"final_plan", pw::to_json(plan_)}, {"migrations", ev}, {"timeline", timeline_}};
}

}  // namespace pw::rt::migration

#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/events/run_records.h"

namespace pw {

// Everything a run produces, real or simulated, as one interface: the
// database writer (pw_db) and the telemetry publisher (pw_ipc) implement it,
// and every command that records hands its run to one RecorderFanout, so
// what reaches the file and what reaches the studio cannot drift apart.
class RunRecorder : public EventSink {
 public:
  virtual void memory(const MemorySample& m) = 0;
  virtual void throughput(const ThroughputSample& t) = 0;
  virtual void migration(const Migration& m) = 0;
  virtual void subnet_state(const SubnetState& s) = 0;
  virtual void subnet_edge(const SubnetEdge& e) = 0;
  virtual void log(const LogRecord& l) = 0;
  // Plan `version` (1, 2, ... within the run) took effect at t_ns.
  virtual void plan(int version, std::int64_t t_ns, const std::string& reason, const nlohmann::json& plan) = 0;
  // What only a stored run keeps (telemetry carries the plan, not these).
  virtual void job(const nlohmann::json& job_spec) {}
  virtual void profile(const nlohmann::json& profile) {}
  virtual void subnet(std::int32_t id, const nlohmann::json& choices) {}
  virtual void summary(const nlohmann::json& summary) {}
  virtual void endpoint(const std::string& name, const std::string& endpoint) {}
  // What only a live audience needs.
  virtual void paused(bool paused) {}
  // Blocks until everything recorded so far is out (committed, sent).
  virtual void flush() = 0;
  // The run's final status; nothing is recorded after it.
  virtual void finish(RunStatus status, const std::string& reason) = 0;
};

// The reason recorded with a run's first plan, the same for every command.
inline constexpr const char* kInitialPlanReason = "initial plan";

// Forwards every record to each recorder added, in order.
class RecorderFanout final : public RunRecorder {
 public:
  void add(RunRecorder* r) {
    if (r) to_.push_back(r);
  }
  bool empty() const { return to_.empty(); }

  void on_event(const Event& e) override {
    for (auto* r : to_) r->on_event(e);
  }
  void on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) override {
    for (auto* r : to_) r->on_memory(stage, t_ns, bytes);
  }
  void memory(const MemorySample& m) override {
    for (auto* r : to_) r->memory(m);
  }
  void throughput(const ThroughputSample& t) override {
    for (auto* r : to_) r->throughput(t);
  }
  void migration(const Migration& m) override {
    for (auto* r : to_) r->migration(m);
  }
  void subnet_state(const SubnetState& s) override {
    for (auto* r : to_) r->subnet_state(s);
  }
  void subnet_edge(const SubnetEdge& e) override {
    for (auto* r : to_) r->subnet_edge(e);
  }
  void log(const LogRecord& l) override {
    for (auto* r : to_) r->log(l);
  }
  void plan(int version, std::int64_t t_ns, const std::string& reason, const nlohmann::json& plan) override {
    for (auto* r : to_) r->plan(version, t_ns, reason, plan);
  }
  void job(const nlohmann::json& j) override {
    for (auto* r : to_) r->job(j);
  }
  void profile(const nlohmann::json& p) override {
    for (auto* r : to_) r->profile(p);
  }
  void subnet(std::int32_t id, const nlohmann::json& choices) override {
    for (auto* r : to_) r->subnet(id, choices);
  }
  void summary(const nlohmann::json& s) override {
    for (auto* r : to_) r->summary(s);
  }
  void endpoint(const std::string& name, const std::string& ep) override {
    for (auto* r : to_) r->endpoint(name, ep);
  }
  void paused(bool p) override {
    for (auto* r : to_) r->paused(p);
  }
  void flush() override {
    for (auto* r : to_) r->flush();
  }
  void finish(RunStatus status, const std::string& reason) override {
    for (auto* r : to_) r->finish(status, reason);
  }

 private:
  std::vector<RunRecorder*> to_;
};

}  // namespace pw

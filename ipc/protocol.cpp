#include "ipc/protocol.h"

#include <algorithm>
#include <chrono>
#include <zmq.hpp>

#include "core/events/event_kinds.h"
#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"

namespace pw::ipc {
namespace {
constexpr const char* kTopics[kTopicCount] = {"status", "events", "memory", "throughput", "migrations",
                                              "subnets", "logs",  "plan",   "heartbeat"};
}

const char* to_string(Topic t) {
  auto i = static_cast<int>(t);
  return i >= 0 && i < kTopicCount ? kTopics[i] : "?";
}

std::optional<Topic> topic_from_string(std::string_view s) {
  for (int i = 0; i < kTopicCount; ++i)
    if (s == kTopics[i]) return static_cast<Topic>(i);
  return std::nullopt;
}

pb::Envelope::BodyCase body_of(Topic t) {
  switch (t) {
    case Topic::Status: return pb::Envelope::kStatus;
    case Topic::Events: return pb::Envelope::kEvents;
    case Topic::Memory: return pb::Envelope::kMemory;
    case Topic::Throughput: return pb::Envelope::kThroughput;
    case Topic::Migrations: return pb::Envelope::kMigrations;
    case Topic::Subnets: return pb::Envelope::kSubnets;
    case Topic::Logs: return pb::Envelope::kLogs;
    case Topic::Plan: return pb::Envelope::kPlan;
    case Topic::Heartbeat: return pb::Envelope::kHeartbeat;
  }
  return pb::Envelope::BODY_NOT_SET;
}

zmq::context_t& context() {
  // Leaked on purpose: a static context's destructor would block at exit
  // on any socket another static still owns.
  static auto* ctx = new zmq::context_t(1);
  return *ctx;
}

void to_pb(const Event& e, pb::Event* o) {
  o->set_stage(e.stage);
  o->set_kind(static_cast<int>(e.kind));
  o->set_start_ns(e.start_ns);
  o->set_end_ns(e.end_ns);
  o->set_microbatch(e.microbatch);
  o->set_chunk(e.chunk);
  o->set_first_layer(e.first_layer);
  o->set_last_layer(e.last_layer);
  o->set_bytes(e.bytes);
  o->set_replica(e.replica);
}
Event from_pb(const pb::Event& e) {
  Event o;
  o.stage = e.stage();
  o.kind = e.kind() >= 0 && e.kind() < kEventKindCount ? static_cast<EventKind>(e.kind()) : EventKind::Idle;
  o.start_ns = e.start_ns();
  o.end_ns = e.end_ns();
  o.microbatch = e.microbatch();
  o.chunk = static_cast<std::int16_t>(e.chunk());
  o.first_layer = e.first_layer();
  o.last_layer = e.last_layer();
  o.bytes = e.bytes();
  // Event::replica is 16 bits: a value beyond it is a damaged message.
  o.replica = e.replica() >= 0 && e.replica() <= INT16_MAX ? static_cast<std::int16_t>(e.replica()) : std::int16_t(0);
  return o;
}
void to_pb(const MemorySample& m, pb::MemorySample* o) {
  o->set_t_ns(m.t_ns);
  o->set_stage(m.stage);
  o->set_bytes(m.bytes);
  o->set_parameters(m.parameters);
  o->set_optimizer(m.optimizer);
  o->set_stashed(m.stashed);
  o->set_activations(m.activations);
  o->set_swapped_out(m.swapped_out);
  o->set_prefetched(m.prefetched);
  o->set_budget(m.budget);
  o->set_replica(m.replica);
  o->set_peak(m.peak > 0 ? m.peak : 0);
}
MemorySample from_pb(const pb::MemorySample& m) {
  MemorySample o;
  o.t_ns = m.t_ns();
  o.stage = m.stage();
  o.bytes = m.bytes();
  o.parameters = m.parameters();
  o.optimizer = m.optimizer();
  o.stashed = m.stashed();
  o.activations = m.activations();
  o.swapped_out = m.swapped_out();
  o.prefetched = m.prefetched();
  o.budget = m.budget();
  // As an event's: beyond 16 bits is a damaged message, read as replica 0.
  o.replica = m.replica() >= 0 && m.replica() <= INT16_MAX ? static_cast<std::int16_t>(m.replica()) : std::int16_t(0);
  o.peak = m.peak() > 0 ? m.peak() : -1;
  return o;
}
void to_pb(const ThroughputSample& t, pb::Throughput* o) {
  o->set_t_ns(t.t_ns);
  o->set_iteration(t.iteration);
  o->set_samples_per_s(t.samples_per_s);
  o->set_iteration_ms(t.iteration_ms);
}
ThroughputSample from_pb(const pb::Throughput& t) { return {t.t_ns(), t.iteration(), t.samples_per_s(), t.iteration_ms()}; }
void to_pb(const Migration& m, pb::Migration* o) {
  o->set_start_ns(m.start_ns);
  o->set_end_ns(m.end_ns);
  o->set_layer(m.layer);
  o->set_from_stage(m.from_stage);
  o->set_to_stage(m.to_stage);
  o->set_bytes(m.bytes);
  o->set_plan_version(m.plan_version);
}
Migration from_pb(const pb::Migration& m) {
  Migration o;
  o.start_ns = m.start_ns();
  o.end_ns = m.end_ns();
  o.layer = m.layer();
  o.from_stage = m.from_stage();
  o.to_stage = m.to_stage();
  o.bytes = m.bytes();
  o.plan_version = m.plan_version();
  return o;
}
void to_pb(const SubnetState& s, pb::SubnetState* o) {
  o->set_t_ns(s.t_ns);
  o->set_subnet(s.subnet);
  o->set_stage(s.stage);
  o->set_phase(static_cast<pb::SubnetPhase>(s.phase));
}
SubnetState from_pb(const pb::SubnetState& s) {
  SubnetState o;
  o.t_ns = s.t_ns();
  o.subnet = s.subnet();
  o.stage = s.stage();
  o.phase = s.phase() >= 0 && s.phase() <= 4 ? static_cast<SubnetPhase>(s.phase()) : SubnetPhase::Queued;
  return o;
}
void to_pb(const SubnetEdge& e, pb::SubnetEdge* o) {
  o->set_t_ns(e.t_ns);
  o->set_resolved_ns(e.resolved_ns);
  o->set_waiter(e.waiter);
  o->set_waited_for(e.waited_for);
  o->set_stage(e.stage);
  o->set_layer(e.layer);
}
SubnetEdge from_pb(const pb::SubnetEdge& e) {
  SubnetEdge o;
  o.t_ns = e.t_ns();
  o.resolved_ns = e.resolved_ns();
  o.waiter = e.waiter();
  o.waited_for = e.waited_for();
  o.stage = e.stage();
  o.layer = e.layer();
  return o;
}
void to_pb(const LogRecord& l, pb::LogLine* o) {
  o->set_t_ns(l.t_ns);
  o->set_level(to_string(l.level));
  o->set_source(l.source);
  o->set_message(l.message);
}
LogRecord from_pb(const pb::LogLine& l) {
  LogRecord o;
  o.t_ns = l.t_ns();
  o.level = l.level() == "debug" ? LogLevel::Debug : l.level() == "warning" ? LogLevel::Warning
            : l.level() == "error" ? LogLevel::Error : LogLevel::Info;
  o.source = l.source();
  o.message = l.message();
  return o;
}
pb::RunState to_pb(RunStatus s) {
  switch (s) {
    case RunStatus::Running: return pb::RUNNING;
    case RunStatus::Finished: return pb::FINISHED;
    case RunStatus::Failed: return pb::FAILED;
    case RunStatus::Stopped: return pb::STOPPED;
    case RunStatus::Interrupted: return pb::INTERRUPTED;
  }
  return pb::RUN_STATE_UNSPECIFIED;
}
const char* to_string(pb::RunState s) {
  switch (s) {
    case pb::RUNNING: return "running";
    case pb::FINISHED: return "finished";
    case pb::FAILED: return "failed";
    case pb::STOPPED: return "stopped";
    case pb::PAUSED: return "paused";
    case pb::INTERRUPTED: return "interrupted";
    default: return "unknown";
  }
}

std::optional<RunStatus> final_status(pb::RunState s) {
  switch (s) {
    case pb::FINISHED: return RunStatus::Finished;
    case pb::FAILED: return RunStatus::Failed;
    case pb::STOPPED: return RunStatus::Stopped;
    case pb::INTERRUPTED: return RunStatus::Interrupted;
    default: return std::nullopt;
  }
}

void decode(const pb::Envelope& env, RunTelemetry& into) {
  switch (env.body_case()) {
    case pb::Envelope::kEvents:
      for (const auto& e : env.events().events()) into.events.push_back(from_pb(e));
      break;
    case pb::Envelope::kMemory:
      for (const auto& m : env.memory().samples()) into.memory.push_back(from_pb(m));
      break;
    case pb::Envelope::kThroughput: into.throughput.push_back(from_pb(env.throughput())); break;
    case pb::Envelope::kMigrations:
      for (const auto& m : env.migrations().migrations()) into.migrations.push_back(from_pb(m));
      break;
    case pb::Envelope::kSubnets:
      for (const auto& x : env.subnets().states()) into.subnet_states.push_back(from_pb(x));
      for (const auto& x : env.subnets().edges()) into.subnet_edges.push_back(from_pb(x));
      break;
    case pb::Envelope::kLogs:
      for (const auto& l : env.logs().lines()) into.logs.push_back(from_pb(l));
      break;
    case pb::Envelope::kPlan: {
      const auto& p = env.plan();
      // Depth-bounded: a peer's plan nested 100,000 deep is dropped, never
      // copied or compared (each recursive in nlohmann::json).
      nlohmann::json j;
      try {
        j = parse_bounded_json(p.plan_json());
      } catch (const SpecError&) {
        break;
      }
      try {
        into.plans.push_back({p.version(), p.t_ns(), p.reason(), plan_from_json(j)});
      } catch (const std::exception&) {
        // Not a plan this build reads: the rest of the run still shows.
      }
      break;
    }
    case pb::Envelope::kStatus: {
      const auto& s = env.status();
      into.status = RunTelemetry::Status{s.job_name(), s.stages(), s.state(), s.reason()};
      break;
    }
    default: break;
  }
}

void fold_event(pb::StageState& s, const pb::Event& e) {
  s.set_stage(e.stage());
  s.set_events(s.events() + 1);
  if (is_busy(static_cast<EventKind>(e.kind()))) s.set_busy_ns(s.busy_ns() + e.end_ns() - e.start_ns());
  s.set_last_end_ns(std::max(s.last_end_ns(), e.end_ns()));
}

void fold_memory(pb::StageState& s, const pb::MemorySample& m) {
  s.set_stage(m.stage());
  s.set_memory_bytes(m.bytes());
  s.set_peak_memory_bytes(std::max(s.peak_memory_bytes(), m.bytes()));
}

}  // namespace pw::ipc

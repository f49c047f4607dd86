#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/clock.h"
#include "core/events/event.h"
#include "core/events/run_records.h"
#include "core/plan/plan_version.h"
#include "ipc/pipewright.pb.h"

namespace zmq {
class context_t;
}

namespace pw::ipc {

namespace pb = ::pipewright::v1;

// The protocol version this build speaks (ipc/pipewright.proto).
constexpr std::uint32_t kProtocolMajor = 1;
// 1: RunState INTERRUPTED; 2: Event.replica, kind allreduce; 3: MemorySample.replica;
// 4: MemorySample.peak
constexpr std::uint32_t kProtocolMinor = 4;

// Telemetry topics: the first frame of every PUB message.
enum class Topic : std::uint8_t { Status, Events, Memory, Throughput, Migrations, Subnets, Logs, Plan, Heartbeat };
constexpr int kTopicCount = 9;
const char* to_string(Topic t);
std::optional<Topic> topic_from_string(std::string_view s);
// The Envelope body case each topic carries.
pb::Envelope::BodyCase body_of(Topic t);

// One ZeroMQ context for the process (its I/O thread serves every socket).
zmq::context_t& context();

using pw::unix_ns;  // core/events/clock.h

// pw records <-> protocol messages.
void to_pb(const Event& e, pb::Event* out);
Event from_pb(const pb::Event& e);
void to_pb(const MemorySample& m, pb::MemorySample* out);
MemorySample from_pb(const pb::MemorySample& m);
void to_pb(const ThroughputSample& t, pb::Throughput* out);
ThroughputSample from_pb(const pb::Throughput& t);
void to_pb(const Migration& m, pb::Migration* out);
Migration from_pb(const pb::Migration& m);
void to_pb(const SubnetState& s, pb::SubnetState* out);
SubnetState from_pb(const pb::SubnetState& s);
void to_pb(const SubnetEdge& e, pb::SubnetEdge* out);
SubnetEdge from_pb(const pb::SubnetEdge& e);
void to_pb(const LogRecord& l, pb::LogLine* out);
LogRecord from_pb(const pb::LogLine& l);
pb::RunState to_pb(RunStatus s);

// The final status a run state reports; nullopt while the run goes on
// (running, paused, unspecified).
std::optional<RunStatus> final_status(pb::RunState s);

// A run's telemetry as pw records: the one decoding of what a publisher
// sends about a run, for whoever follows one (the studio's live source).
// decode() appends what one message carries; a part it lacks stays empty.
struct RunTelemetry : RunRecordBatch {
  struct Status {  // the run as its last status message says
    std::string job_name;
    int stages = 0;
    pb::RunState state = pb::RUN_STATE_UNSPECIFIED;
    std::string reason;
    bool paused() const { return state == pb::PAUSED; }
    std::optional<RunStatus> final() const { return final_status(state); }
  };
  std::vector<PlanVersion> plans;  // a plan whose JSON is not a plan is left out
  std::optional<Status> status;    // the last status decoded
};
void decode(const pb::Envelope& env, RunTelemetry& into);

// The per-stage state telemetry keeps (the publisher's snapshots, `watch`):
// one fold for both. Busy time is core/events/event_kinds.h's is_busy.
void fold_event(pb::StageState& s, const pb::Event& e);
void fold_memory(pb::StageState& s, const pb::MemorySample& m);
const char* to_string(pb::RunState s);

}  // namespace pw::ipc

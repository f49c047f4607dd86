#include <gtest/gtest.h>

#include "ipc/protocol.h"

// ipc::decode: the one decoding of a run's telemetry into pw records (the
// studio's live source reads runs through it).
namespace pw::ipc {
namespace {

TEST(RunTelemetry, EveryBodyDecodesIntoItsRecords) {
  RunTelemetry t;
  pb::Envelope env;
  Event e;
  e.stage = 2;
  e.kind = static_cast<EventKind>(1);
  e.start_ns = 100;
  e.end_ns = 250;
  e.microbatch = 3;
  to_pb(e, env.mutable_events()->add_events());
  to_pb(e, env.mutable_events()->add_events());
  decode(env, t);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[1].stage, 2);
  EXPECT_EQ(t.events[1].start_ns, 100);
  EXPECT_EQ(t.events[1].end_ns, 250);
  EXPECT_EQ(t.events[1].microbatch, 3);

  env.Clear();
  to_pb(ThroughputSample{5, 7, 12.5, 3.0}, env.mutable_throughput());
  decode(env, t);
  ASSERT_EQ(t.throughput.size(), 1u);
  EXPECT_EQ(t.throughput[0].iteration, 7);
  EXPECT_DOUBLE_EQ(t.throughput[0].samples_per_s, 12.5);
  EXPECT_EQ(t.events.size(), 2u);  // appended, never cleared
  EXPECT_FALSE(t.status);

  env.Clear();
  LogRecord l;
  l.t_ns = 9;
  l.level = LogLevel::Warning;
  l.source = "coordinator";
  l.message = "slow stage";
  to_pb(l, env.mutable_logs()->add_lines());
  decode(env, t);
  ASSERT_EQ(t.logs.size(), 1u);
  EXPECT_EQ(t.logs[0].message, "slow stage");
}

TEST(RunTelemetry, PlansAreDecodedAndOnesThatAreNotPlansLeftOut) {
  Plan p = uniform_partition(8, 2);
  pb::Envelope env;
  env.mutable_plan()->set_version(2);
  env.mutable_plan()->set_t_ns(1234);
  env.mutable_plan()->set_reason("rebalance");
  env.mutable_plan()->set_plan_json(to_json(p).dump());
  RunTelemetry t;
  decode(env, t);
  ASSERT_EQ(t.plans.size(), 1u);
  EXPECT_EQ(t.plans[0].version, 2);
  EXPECT_EQ(t.plans[0].t_ns, 1234);
  EXPECT_EQ(t.plans[0].reason, "rebalance");
  ASSERT_EQ(t.plans[0].plan.stages.size(), 2u);
  EXPECT_EQ(t.plans[0].plan.stages[1].last_layer, p.stages[1].last_layer);
  env.mutable_plan()->set_plan_json("{not json");
  decode(env, t);
  env.mutable_plan()->set_plan_json("[1, 2]");
  decode(env, t);
  EXPECT_EQ(t.plans.size(), 1u);
}

TEST(RunTelemetry, StatusSaysPausedAndTheFinalStatus) {
  pb::Envelope env;
  auto* s = env.mutable_status();
  s->set_job_name("j");
  s->set_stages(4);
  s->set_state(pb::PAUSED);
  RunTelemetry t;
  decode(env, t);
  ASSERT_TRUE(t.status);
  EXPECT_EQ(t.status->job_name, "j");
  EXPECT_EQ(t.status->stages, 4);
  EXPECT_TRUE(t.status->paused());
  EXPECT_FALSE(t.status->final());
  s->set_state(pb::INTERRUPTED);
  s->set_reason("interrupted by SIGINT");
  decode(env, t);
  EXPECT_FALSE(t.status->paused());
  EXPECT_EQ(t.status->final(), RunStatus::Interrupted);
  EXPECT_EQ(t.status->reason, "interrupted by SIGINT");
  // Every final state maps back to the status it was published from.
  for (RunStatus r : {RunStatus::Finished, RunStatus::Failed, RunStatus::Stopped, RunStatus::Interrupted})
    EXPECT_EQ(final_status(to_pb(r)), r);
  EXPECT_FALSE(final_status(pb::RUNNING));
  EXPECT_FALSE(final_status(pb::RUN_STATE_UNSPECIFIED));
}

}  // namespace
}  // namespace pw::ipc

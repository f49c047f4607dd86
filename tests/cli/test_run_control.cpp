// The control handler a pipeline run and a supernet run share
// (engine/cli/runtime/run_control.h): requests become the RunCommands the
// coordinator or the CSP launcher takes, and what a run's abilities lack is
// refused saying why, one code for both engines (issue 42).
#include <gtest/gtest.h>

#include "cli/runtime/run_control.h"

namespace pw::cli {
namespace {

namespace pb = ipc::pb;

pb::ControlRequest request(void (*set)(pb::ControlRequest&)) {
  pb::ControlRequest r;
  set(r);
  return r;
}
const auto kPause = request([](pb::ControlRequest& r) { r.mutable_pause(); });
const auto kResume = request([](pb::ControlRequest& r) { r.mutable_resume(); });
const auto kStop = request([](pb::ControlRequest& r) { r.mutable_stop(); });
const auto kCheckpoint = request([](pb::ControlRequest& r) { r.mutable_checkpoint(); });
const auto kRebalance = request([](pb::ControlRequest& r) { r.mutable_rebalance(); });
const auto kStatus = request([](pb::ControlRequest& r) { r.mutable_query_status(); });

TEST(RunControl, APipelineRunsRequestsBecomeItsCommandsInOrder) {
  rt::RunCommands commands;
  rt::RunCommands::Abilities can;
  can.rebalances = true;
  commands.set_abilities(can);
  RunControl control(commands);
  for (const auto& r : {kPause, kResume, kCheckpoint, kRebalance, kStatus, kStop})
    EXPECT_EQ(control.handle(r, nullptr).code(), pb::OK);
  using C = rt::RunCommand;
  EXPECT_EQ(commands.take(), (std::vector<C>{C::Pause, C::Resume, C::Checkpoint, C::Rebalance, C::Stop}));
  EXPECT_EQ(control.handle(kResume, nullptr).error(), "not paused");
  EXPECT_EQ(control.handle(kPause, nullptr).code(), pb::OK);
  EXPECT_EQ(control.handle(kPause, nullptr).error(), "already paused");
  pb::ControlRequest set;
  set.mutable_set()->set_key("pace");
  EXPECT_EQ(control.handle(set, nullptr).code(), pb::INVALID);
}

TEST(RunControl, WhatARunCannotDoIsRefusedSayingWhy) {
  rt::RunCommands commands;
  rt::RunCommands::Abilities can;
  can.flushes = false;  // pipedream
  can.checkpoints = false;
  commands.set_abilities(can);
  RunControl control(commands);
  for (const auto& r : {kPause, kStop, kCheckpoint}) {
    const auto reply = control.handle(r, nullptr);
    EXPECT_EQ(reply.code(), pb::UNSUPPORTED);
    EXPECT_NE(reply.error().find("no flush"), std::string::npos) << reply.error();
  }
  EXPECT_NE(control.handle(kRebalance, nullptr).error().find("runtime.replan"), std::string::npos);
  EXPECT_TRUE(commands.take().empty());
}

// A supernet run (cli/nas/cmd_nas_run.cpp) serves the same handler with
// only_stop: its stop reaches the queue the CSP launcher takes
// (CspLaunch::commands), the rest is refused naming why.
TEST(RunControl, ASupernetRunTakesStopOnlyThroughTheSameHandler) {
  rt::RunCommands commands;
  rt::RunCommands::Abilities can;
  can.only_stop = true;
  commands.set_abilities(can);
  RunControl control(commands);
  for (const auto& r : {kPause, kResume, kCheckpoint, kRebalance}) {
    const auto reply = control.handle(r, nullptr);
    EXPECT_EQ(reply.code(), pb::UNSUPPORTED);
    EXPECT_NE(reply.error().find("take stop only"), std::string::npos) << reply.error();
  }
  EXPECT_TRUE(commands.take().empty());
  EXPECT_EQ(control.handle(kStatus, nullptr).code(), pb::OK);
  EXPECT_EQ(control.handle(kStop, nullptr).code(), pb::OK);
  EXPECT_EQ(commands.take(), std::vector<rt::RunCommand>{rt::RunCommand::Stop});
}

}  // namespace
}  // namespace pw::cli

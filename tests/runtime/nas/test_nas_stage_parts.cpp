// The supernet trainer's parts, each alone (engine/runtime/nas, issue 42):
// the policy step (CSP's, and the racing baseline's order under a hold),
// the record stream (what the launcher replays: events, transfers, memory),
// the device cache as the trainer drives it (resident bytes within the
// budget, the whole slice without one), and the transport over a real Gloo
// pair (a subnet's activation and gradient cross with its id).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include "../gloo_pair.h"
#include "core/nas/cache_prediction.h"
#include "core/nas/nas_job.h"
#include "core/nas/subnet_log.h"
#include "runtime/nas/stage_cache.h"
#include "runtime/nas/stage_policy.h"
#include "runtime/nas/stage_recorder.h"
#include "runtime/nas/stage_transport.h"

using namespace pw::rt::nas;
using pw::nas::CspActionKind;
using pw::nas::CspStage;

namespace {
const std::string kPartsJob = std::string(PW_SOURCE_DIR) + "/resources/jobs/fmnist-supernet.json";

std::string parts_tmp(const std::string& tag) {
  return (std::filesystem::temp_directory_path() / ("pw-nas-parts-" + std::to_string(getpid()) + "-" + tag)).string();
}

pw::nas::NasJob parts_job(std::vector<std::string> sets) {
  sets.insert(sets.end(), {"pipeline.stages=2", "cluster.devices=2", "search_space.kernels=[3,5]",
                           "search_space.widths=[8,12,16,20,24]", "training.iterations=12"});
  return pw::nas::prepare_nas_job(pw::load_job(kPartsJob, sets));
}

// What a launcher's replay of the stream hands its sink.
struct Captured : pw::EventSink {
  std::vector<pw::Event> events;
  std::vector<std::pair<int, std::int64_t>> memory;  // (stage, bytes)
  void on_event(const pw::Event& e) override { events.push_back(e); }
  void on_memory(std::int32_t stage, std::int64_t, std::int64_t bytes) override { memory.emplace_back(stage, bytes); }
};
}  // namespace

TEST(NasStagePolicy, TheRacingBaselineAdmitsInOrderWithinTheWindowAndBelowTheHold) {
  std::vector<pw::nas::Subnet> seq(10, pw::nas::Subnet{1, 1});
  CspStage stage(0, 2, {0, 1}, &seq, 3);
  StagePolicy racing(stage, /*csp=*/false, 3);
  std::set<int> in_flight;
  auto flying = [&](int b) { return in_flight.count(b) > 0; };
  for (int want : {0, 1, 2}) {
    auto a = racing.next(flying, -1, nullptr);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->kind, CspActionKind::Forward);
    EXPECT_EQ(a->subnet, want);
    stage.forward_started(want);
    in_flight.insert(want);
  }
  EXPECT_FALSE(racing.next(flying, -1, nullptr)) << "a window of 3 admits 3";
  // Subnet 0 comes back: its backward first, then the window moves on, but
  // a hold at 4 (a checkpoint's or a stop's drain) admits 3 and not 4.
  stage.backward_ready(0);
  auto b = racing.next(flying, -1, nullptr);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, CspActionKind::Backward);
  stage.backward_started(0);
  stage.backward_done(0);
  in_flight.erase(0);
  stage.hold_from(4);
  auto c = racing.next(flying, -1, nullptr);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->subnet, 3);
  stage.forward_started(3);
  in_flight.insert(3);
  EXPECT_FALSE(racing.next(flying, -1, nullptr)) << "held from 4";
}

TEST(NasStagePolicy, ALaterStageRacesTheFirstArrivalAndCspWaitsForItsTurn) {
  std::vector<pw::nas::Subnet> seq(4, pw::nas::Subnet{1, 1});
  CspStage racing_stage(1, 2, {0, 1}, &seq, 4), csp_stage(1, 2, {0, 1}, &seq, 4);
  StagePolicy racing(racing_stage, false, 4), csp(csp_stage, true, 4);
  auto none = [](int) { return false; };
  // Subnet 1's activation arrived before subnet 0's: the baseline runs it,
  // CSP (the same layers: a conflict) waits for subnet 0.
  racing_stage.forward_ready(1);
  csp_stage.forward_ready(1);
  auto r = racing.next(none, 1, nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->subnet, 1);
  std::vector<pw::nas::SubnetWait> waits;
  EXPECT_FALSE(csp.next(none, 1, &waits));
  ASSERT_FALSE(waits.empty());
  EXPECT_EQ(waits[0].waiter, 1);
  EXPECT_EQ(waits[0].waited_for, 0);
}

TEST(NasStageRecorder, WhatTheStageRecordsIsWhatTheLauncherReplays) {
  const std::string file = parts_tmp("records.jsonl");
  StageClock clock(pw::steady_now_ns());
  {
    StageRecorder rec(file, false, 1, {2, 3}, clock);
    rec.event(pw::EventKind::Forward, 7, 10, 20);
    rec.transfer(true, pw::nas::candidate_key(3, 4), 30, 40, 4096);
    rec.memory(1000);
    rec.memory(1000);  // unchanged: no sample
    rec.memory(1500);
    EXPECT_EQ(rec.sync(), std::filesystem::file_size(file));
  }
  Captured got;
  pw::nas::SubnetLogTail tail(file);
  tail.poll(nullptr, &got);
  EXPECT_EQ(tail.malformed(), 0);
  ASSERT_EQ(got.events.size(), 2u);
  EXPECT_EQ(got.events[0].kind, pw::EventKind::Forward);
  EXPECT_EQ(got.events[0].stage, 1);
  EXPECT_EQ(got.events[0].microbatch, 7);
  EXPECT_EQ(got.events[0].first_layer, 2);
  EXPECT_EQ(got.events[0].last_layer, 3);
  EXPECT_EQ(got.events[1].kind, pw::EventKind::SwapIn);
  EXPECT_EQ(got.events[1].first_layer, 3);
  EXPECT_EQ(got.events[1].microbatch, 4);
  EXPECT_EQ(got.events[1].bytes, 4096);
  ASSERT_EQ(got.memory.size(), 2u);
  EXPECT_EQ(got.memory[0], std::make_pair(1, std::int64_t{1000}));
  EXPECT_EQ(got.memory[1], std::make_pair(1, std::int64_t{1500}));
  std::filesystem::remove(file);
}

TEST(NasStageRecorder, AnUnwritableStreamIsNamed) {
  StageClock clock(0);
  try {
    StageRecorder rec("/nonexistent-dir/stage0.records.jsonl", false, 0, {0, 1}, clock);
    ADD_FAILURE() << "opened a file in a directory that does not exist";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/stage0.records.jsonl"), std::string::npos) << e.what();
  }
}

TEST(NasStageCache, WithoutABudgetTheWholeSliceIsResidentWithOneItIsWithinIt) {
  at::set_num_threads(1);
  const std::string file = parts_tmp("cache.jsonl");
  StageClock clock(0);
  StageRecorder rec(file, false, 1, {0, 1}, clock);
  {
    auto nj = parts_job({});
    CnnSupernet net(nj.job, nj.space, nj.stages[1]);
    StageCache cache(nj, 1, nj.space.window, net, clock, rec);
    EXPECT_FALSE(cache.active());
    EXPECT_EQ(cache.resident_bytes(), resident_state_bytes(net));
    EXPECT_GT(cache.resident_bytes(), 0);
    EXPECT_TRUE(cache.finish().is_null());
  }
  {
    auto whole = parts_job({});
    const double slice = pw::nas::supernet_slice_bytes(whole)[1];
    char gb[64];
    std::snprintf(gb, sizeof gb, "%.17g", slice / 2 / (1024.0 * 1024 * 1024));
    auto nj = parts_job({std::string("search_space.device_budget_gb=") + gb});
    ASSERT_TRUE(pw::nas::stage_cache_active(nj)[1]);
    CnnSupernet net(nj.job, nj.space, nj.stages[1]);
    StageCache cache(nj, 1, nj.space.window, net, clock, rec);
    ASSERT_TRUE(cache.active());
    EXPECT_EQ(cache.resident_bytes(), 0) << "the device starts empty";
    const std::int64_t capacity = pw::nas::stage_capacities(nj)[1];
    // The trainer's order, one subnet at a time: a forward waits for its
    // cache step, the update releases it, the prefetch runs ahead.
    for (int b = 0; b < static_cast<int>(nj.sequence.size()); ++b) {
      ASSERT_TRUE(cache.prepare_forward(b, 0)) << b;
      cache.started(b);
      EXPECT_GT(cache.resident_bytes(), 0) << b;
      EXPECT_LE(cache.resident_bytes(), capacity) << b;
      cache.released(b);
      cache.prefetch(INT_MAX);
      EXPECT_LE(cache.resident_bytes(), capacity) << b;
    }
    auto figures = cache.finish();
    ASSERT_FALSE(figures.is_null());
    EXPECT_EQ(figures["uses"].get<std::uint64_t>(), pw::nas::predict_device_cache(nj).stages[1].uses);
    EXPECT_LE(figures["peak_device_bytes"].get<std::int64_t>(), capacity);
  }
  std::filesystem::remove(file);
}

TEST(NasStageTransport, ASubnetsActivationAndGradientCrossWithItsId) {
  pw::rt::test::GlooPair pair("nas-transport");
  const std::vector<std::int64_t> shape{2, 3};
  std::vector<pw::nas::Subnet> seq(3, pw::nas::Subnet{1});
  CspStage first(0, 2, {0, 0}, &seq, 3), second(1, 2, {0, 0}, &seq, 3);
  // Each side expects one message (stage 1: an activation; stage 0: a gradient).
  StageTransport t0(pair.g0, 0, 2, shape, 1), t1(pair.g1, 1, 2, shape, 1);
  const at::Tensor act = at::arange(6, at::kFloat).reshape(shape), grad = -act;
  t0.send_activation(2, act);
  for (int i = 0; i < 100 && t1.first_activation() < 0; ++i) {
    t1.sleep_until_arrival();
    t1.deliver(second);
  }
  ASSERT_EQ(t1.first_activation(), 2);
  EXPECT_TRUE(at::equal(t1.take_activation(2), act));
  EXPECT_EQ(t1.first_activation(), -1);
  // Stage 0 has started all three (nothing left to admit): only an
  // arrival makes work for it. Subnet 0's gradient comes back.
  for (int b = 0; b < 3; ++b) first.forward_started(b);
  ASSERT_FALSE(first.next());
  t1.send_gradient(0, grad);
  for (int i = 0; i < 100 && !first.next(); ++i) {
    t0.sleep_until_arrival();
    t0.deliver(first);
  }
  auto a = first.next();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, CspActionKind::Backward);
  EXPECT_EQ(a->subnet, 0);
  EXPECT_TRUE(at::equal(t0.take_gradient(0), grad));
  t0.drain();
  t1.drain();
}

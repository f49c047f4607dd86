// The Messenger's two modes on a real Gloo pair: tagged pairs a send with
// the receive of the same tag whatever the order; ordered drops the tags,
// so the k-th send meets the k-th receive, as NCCL matches them.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <cmath>
#include <stdexcept>
#include <thread>

#include "gloo_pair.h"
#include "runtime/messenger.h"
#include "runtime/process_group.h"
#include "runtime/profiler.h"
#include "runtime/rendezvous.h"

namespace pw::rt {
namespace {

// Rank 0 sends 1s (tag 5) then 2s (tag 7); rank 1 receives tag 7 first.
// Returns what rank 1's two receives got (their first elements).
std::pair<float, float> exchange(MessagingMode mode) {
  test::GlooPair pair("m");
  Messenger m0(pair.g0, mode), m1(pair.g1, mode);
  std::vector<at::Tensor> ones{at::ones({3})}, twos{at::full({3}, 2.0)};
  std::vector<at::Tensor> first{at::zeros({3})}, second{at::zeros({3})};
  auto s1 = m0.send(ones, 1, 5);
  auto s2 = m0.send(twos, 1, 7);
  auto r1 = m1.recv(first, 0, 7);
  auto r2 = m1.recv(second, 0, 5);
  for (auto* w : {&s1, &s2, &r1, &r2}) (*w)->wait();
  return {first[0][0].item<float>(), second[0][0].item<float>()};
}

TEST(Messenger, TaggedPairsByTagOrderedByPostingOrder) {
  EXPECT_EQ(exchange(MessagingMode::Tagged), std::make_pair(2.0f, 1.0f));
  EXPECT_EQ(exchange(MessagingMode::Ordered), std::make_pair(1.0f, 2.0f));
}

TEST(Messenger, ModeNamesAndGroupMisuse) {
  EXPECT_EQ(messaging_mode_from_string("tagged"), MessagingMode::Tagged);
  EXPECT_EQ(messaging_mode_from_string("ordered"), MessagingMode::Ordered);
  EXPECT_FALSE(messaging_mode_from_string("nccl").has_value());
  LocalStoreDir dir;
  auto store = c10::make_intrusive<c10d::FileStore>(dir.file(), 1);
  GlooGroupOptions opt{.prefix = "g", .timeout = std::chrono::seconds(60), .threads = 1, .device = nullptr};
  Messenger m(make_gloo_group(store, 0, 1, opt), MessagingMode::Ordered);
  EXPECT_THROW(m.end_group(), std::logic_error);
  m.begin_group();
  EXPECT_THROW(m.begin_group(), std::logic_error);
  std::vector<at::Tensor> buf{at::ones({2})};
  EXPECT_THROW(m.allreduce(buf), std::logic_error);  // a collective inside a point-to-point group
  m.end_group();
  m.allreduce(buf)->wait();
  EXPECT_EQ(buf[0][0].item<float>(), 1.0f);
}

// A stage used offline (re-partitioning a checkpoint) has no group: its
// Messenger is built and refuses to move anything, rather than crash.
TEST(Messenger, WithoutAProcessGroupItIsBuiltButMovesNothing) {
  Messenger m({}, MessagingMode::Tagged);
  EXPECT_FALSE(m.ordered());
  std::vector<at::Tensor> buf{at::ones({2})};
  EXPECT_THROW(m.send(buf, 1, 0), std::logic_error);
  EXPECT_THROW(m.allreduce(buf), std::logic_error);
  m.begin_group();
  m.end_group();
}

// The profiler's link probe posts its ping-pong through ordered messengers:
// it completes (an order both ends share) and measures a positive link.
TEST(Messenger, TheLinkProbeRunsOrdered) {
  LinkProfile l = measure_local_link(64 * 1024, 3);
  EXPECT_GT(l.latency_us, 0);
  EXPECT_GT(l.gbps, 0);
  EXPECT_TRUE(std::isfinite(l.gbps));
}

}  // namespace
}  // namespace pw::rt

// Failure attribution by the error's type (engine/runtime/failure_kind.h):
// a transport error blames the peer whatever its message says, an own error
// is never taken for a transport one because its message looks like one.
#include <gtest/gtest.h>

#include <c10/util/Exception.h>
#include <gloo/common/error.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <ATen/ATen.h>

#include <stdexcept>
#include <thread>

#include "gloo_pair.h"
#include "runtime/failure_kind.h"
#include "runtime/process_group.h"
#include "runtime/rendezvous.h"

using namespace pw::rt;

namespace {
const std::string kClosed = "[gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4242";
}

TEST(FailureKind, TheTypeDecidesNotTheMessage) {
  EXPECT_EQ(failure_kind(::gloo::IoException(kClosed)), FailureKind::PeerLost);
  EXPECT_EQ(failure_kind(::gloo::IoException("Read error: no reason in the text")), FailureKind::PeerLost);
  // A stage's own errors that merely mention the transport stay its own.
  EXPECT_EQ(failure_kind(std::runtime_error(kClosed)), FailureKind::Own);
  EXPECT_EQ(failure_kind(c10::Error(kClosed, "")), FailureKind::Own);
  EXPECT_EQ(failure_kind(::gloo::InvalidOperationException(kClosed)), FailureKind::Own);
}

TEST(FailureKind, TravelsThroughTheStoreAsText) {
  for (FailureKind k : {FailureKind::Own, FailureKind::PeerLost}) EXPECT_EQ(failure_kind_from_string(to_string(k)), k);
  EXPECT_EQ(failure_kind_from_string(""), FailureKind::Own);
  EXPECT_EQ(failure_kind_from_string("something newer"), FailureKind::Own);
}

TEST(FailureKind, BlamesTheStageWithItsOwnFailure) {
  const StageFailure none, own{"out of memory", FailureKind::Own}, lost{kClosed, FailureKind::PeerLost};
  EXPECT_EQ(stage_to_blame(0, {lost, own, none}), 1);
  EXPECT_EQ(stage_to_blame(2, {none, lost, lost, own}), 3);
  // Its own failure, or nothing better reported: the reporter.
  EXPECT_EQ(stage_to_blame(1, {own, own, none}), 1);
  EXPECT_EQ(stage_to_blame(0, {lost, lost, none}), 0);
  EXPECT_EQ(stage_to_blame(2, {own, none, none}), 2);  // exited without a message
  // A message-looking own error elsewhere is still own: the type was kept.
  EXPECT_EQ(stage_to_blame(0, {lost, {kClosed, FailureKind::Own}}), 1);
}

// The type survives c10d: a receive whose peer's group goes away (as when
// its process dies) rethrows Gloo's IoException from Work::wait.
TEST(FailureKind, ARealGlooGroupLosingItsPeerIsPeerLost) {
  pw::rt::test::GlooPair pair("t");
  std::vector<at::Tensor> buf{at::empty({4})};
  auto work = pair.g0->recv(buf, 1, 7);
  pair.g1.reset();  // closes rank 1's pairs
  try {
    work->wait();
    FAIL() << "the receive completed without a sender";
  } catch (const std::exception& e) {
    EXPECT_EQ(failure_kind(e), FailureKind::PeerLost) << e.what();
    // Not the receive's 60 s timeout (also an IoException): the closed pair.
    EXPECT_EQ(std::string(e.what()).find("Timed out"), std::string::npos) << e.what();
  }
}

// The one place children are reaped (runtime/child_process.h): how each
// ended, told apart: an exit status, a signal, a program that could not be
// run (127), a grace period that ran out, a pid that was not ours.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <optional>
#include <thread>

#include "runtime/child_process.h"

namespace pw::rt {
namespace {

pid_t sh(const std::string& script) { return spawn_child({"/bin/sh", "-c", script}); }

TEST(ChildProcess, ExitStatusAndSignalAreToldApart) {
  ChildExit x = wait_child(sh("exit 3"));
  EXPECT_EQ(x.code, 3);
  EXPECT_EQ(x.signal, 0);
  EXPECT_FALSE(x.ok());
  EXPECT_EQ(x.how(), "exited with status 3");
  ChildExit k = wait_child(sh("kill -TERM $$"));
  EXPECT_EQ(k.signal, SIGTERM);
  EXPECT_EQ(k.how(), "killed by signal " + std::to_string(SIGTERM));
  EXPECT_TRUE(wait_child(sh("exit 0")).ok());
  EXPECT_EQ(wait_child(spawn_child({"/nonexistent/program"})).code, 127);
}

TEST(ChildProcess, PollIsEmptyWhileItRunsAndReapsOnce) {
  pid_t p = sh("sleep 30");
  EXPECT_FALSE(poll_child(p).has_value());
  ChildExit x = stop_child(p, 0.1);  // its grace runs out: SIGKILL
  EXPECT_TRUE(x.forced);
  EXPECT_EQ(x.signal, SIGKILL);
  // Reaped: a second look finds no child of ours.
  auto again = poll_child(p);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->lost);
  EXPECT_FALSE(again->ok());
}

TEST(ChildProcess, StopWaitsForAChildThatEndsInItsGrace) {
  auto t0 = std::chrono::steady_clock::now();
  ChildExit x = stop_child(sh("sleep 0.2; exit 5"), 30);
  EXPECT_FALSE(x.forced);
  EXPECT_EQ(x.code, 5);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));  // did not wait out the grace
}

// A stopped worker has not ended: only a caller that asks is told, and the
// child is still there to be killed and reaped (the CSP launcher's
// "stopped responding").
TEST(ChildProcess, AStoppedChildIsReportedOnlyWhenAsked) {
  pid_t p = sh("sleep 30");
  ASSERT_EQ(kill(p, SIGSTOP), 0);
  std::optional<ChildExit> seen;
  for (int i = 0; i < 500 && !seen; ++i) {
    seen = poll_child(p, /*report_stopped=*/true);
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->stopped, SIGSTOP);
  EXPECT_FALSE(seen->lost);
  EXPECT_FALSE(poll_child(p).has_value());  // not ended
  kill(p, SIGKILL);
  ChildExit x = wait_child(p);
  EXPECT_EQ(x.signal, SIGKILL);
  EXPECT_EQ(x.stopped, 0);
}

}  // namespace
}  // namespace pw::rt

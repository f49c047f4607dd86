// The one place children are reaped (runtime/child_process.h): how each
// ended, told apart: an exit status, a signal, a program that could not be
// run (127), a grace period that ran out, a pid that was not ours.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>

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

}  // namespace
}  // namespace pw::rt

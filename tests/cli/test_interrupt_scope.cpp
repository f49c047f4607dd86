// The one interrupt scope (engine/cli/interrupt.h, issue 42): it notes the
// signal's number, says it through check() and probe(), and puts the
// previous handlers back when it ends, also when a check inside it throws
// (the coordinator's own handlers once stayed installed after a throw).
#include <gtest/gtest.h>

#include <csignal>

#include "cli/interrupt.h"

namespace pw::cli {
namespace {

volatile std::sig_atomic_t g_previous_ran = 0;
void previous_handler(int) { g_previous_ran = 1; }

// The handler installed for `sig` now.
void (*handler_of(int sig))(int) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

// A handler of the test's own for SIGINT and SIGTERM while it lives.
struct PreviousHandlers {
  struct sigaction old_int {}, old_term {};
  PreviousHandlers() {
    struct sigaction sa {};
    sa.sa_handler = previous_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~PreviousHandlers() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

TEST(InterruptScope, NotesTheSignalsNumberAndSaysItEveryWay) {
  PreviousHandlers previous;
  InterruptScope scope;
  EXPECT_EQ(scope.signal(), 0);
  EXPECT_NO_THROW(scope.check());
  auto probe = scope.probe();
  EXPECT_EQ(probe(), 0);
  std::raise(SIGTERM);
  EXPECT_EQ(g_previous_ran, 0) << "the scope's handler, not the previous one, took it";
  EXPECT_EQ(scope.signal(), SIGTERM);
  EXPECT_EQ(probe(), SIGTERM);
  EXPECT_EQ(interrupt_signal(), SIGTERM);
  try {
    scope.check();
    ADD_FAILURE() << "check() did not throw after SIGTERM";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.signal, SIGTERM);
    EXPECT_STREQ(e.what(), "interrupted by SIGTERM");
  }
}

TEST(InterruptScope, RestoresThePreviousHandlersWhenACheckInsideThrows) {
  PreviousHandlers previous;
  try {
    InterruptScope scope;
    EXPECT_NE(handler_of(SIGINT), previous_handler);
    std::raise(SIGINT);
    check_interrupt();  // throws: the scope ends by unwinding
    ADD_FAILURE() << "check_interrupt() did not throw after SIGINT";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.signal, SIGINT);
  }
  EXPECT_EQ(handler_of(SIGINT), previous_handler);
  EXPECT_EQ(handler_of(SIGTERM), previous_handler);
  EXPECT_EQ(interrupt_signal(), 0) << "outside any scope nothing is pending";
  g_previous_ran = 0;
  std::raise(SIGTERM);
  EXPECT_EQ(g_previous_ran, 1) << "the previous handler takes signals again";
}

TEST(InterruptScope, AnInnerScopeKeepsTheOutersSignalAndANewScopeStartsClean) {
  PreviousHandlers previous;
  {
    InterruptScope outer;
    std::raise(SIGTERM);
    {
      InterruptScope inner;
      EXPECT_EQ(inner.signal(), SIGTERM) << "a signal the command already got is still pending";
    }
    EXPECT_EQ(outer.signal(), SIGTERM);
    EXPECT_NE(handler_of(SIGTERM), previous_handler) << "the inner scope put the outer's handler back";
  }
  InterruptScope next;
  EXPECT_EQ(next.signal(), 0) << "an earlier command's signal is not this one's";
}

}  // namespace
}  // namespace pw::cli

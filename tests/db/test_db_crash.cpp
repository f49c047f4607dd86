#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "db/run_reader.h"
#include "db/run_writer.h"
#include "db/sqlite_util.h"
#include "db_test_util.h"

namespace pw {
namespace {

// A child process records events, reporting through a pipe how many are
// committed; the parent kills it with SIGKILL mid-run. The file must open,
// hold every committed event intact, and show the run as not finished.
TEST(RunDbCrash, KillDashNineKeepsCommittedEvents) {
  test::TempDir d;
  auto path = d.file("crash.sqlite");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    try {
      db::RunWriterOptions o;
      o.batch_records = 5000;
      o.max_delay = std::chrono::milliseconds(5);
      db::RunWriter w(path, {"crashme", "crash", "run", 4}, o);
      for (std::int64_t i = 0;; ++i) {
        w.on_event(test::synthetic_event(i));
        if ((i + 1) % 20000 == 0) {
          w.flush();  // everything up to i is committed now
          std::int64_t n = i + 1;
          if (write(fds[1], &n, sizeof n) != sizeof n) _exit(3);
        }
      }
    } catch (...) {
      _exit(2);
    }
  }
  close(fds[1]);
  std::int64_t committed = 0, n = 0;
  // Kill after a few flushes, while the writer keeps queueing and committing.
  for (int k = 0; k < 4 && read(fds[0], &n, sizeof n) == sizeof n; ++k) committed = n;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own with " << WEXITSTATUS(status);
  ASSERT_EQ(committed, 80000);

  db::RunReader r(path);
  EXPECT_EQ(r.run().run_id, "crashme");
  EXPECT_EQ(r.run().status, RunStatus::Running);
  EXPECT_EQ(r.run().ended_unix_ns, -1);
  auto count = r.event_count();
  EXPECT_GE(count, committed);
  std::int64_t i = 0;
  bool all_same = true;
  r.for_each_event([&](const Event& e) { all_same = all_same && test::same(e, test::synthetic_event(i++)); });
  EXPECT_TRUE(all_same);
  EXPECT_EQ(i, count);
}

// The file stops growing mid-run (a full disk; here the file-size limit,
// which SQLite sees as the same write error): flush and finish must return
// with the error, promptly, from every state the writer can be in when the
// write fails. The child is killed by alarm if it hangs.
TEST(RunDbCrash, AWriteErrorEndsFlushAndFinishInsteadOfHanging) {
  for (int round = 0; round < 6; ++round) {
    test::TempDir d;
    auto path = d.file("full.sqlite");
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(20);
      signal(SIGXFSZ, SIG_IGN);  // a failed write (EFBIG), not a signal
      rlimit lim{};
      lim.rlim_cur = lim.rlim_max = (2 + round) * 512 * 1024;
      if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(4);
      int code = 3;
      try {
        db::RunWriterOptions o;
        o.batch_records = 1000 << round;
        o.max_delay = std::chrono::milliseconds(1);
        db::RunWriter w(path, {"full", "full", "run", 4}, o);
        try {
          for (std::int64_t i = 0; i < 5'000'000; ++i) {
            w.on_event(test::synthetic_event(i));
            if (i % 777 == 0) w.flush();
          }
        } catch (const db::DbError&) {
          code = 0;  // the write error reached the producer
        }
        try {
          w.finish(RunStatus::Finished, "");
        } catch (const db::DbError&) {
        }
      } catch (...) {
        _exit(2);
      }
      _exit(code);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << "round " << round << ": the writer hung (killed by signal "
                                   << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "round " << round << ": no write error reached the producer";
    // What was committed before the error is still a readable run.
    db::RunReader r(path);
    EXPECT_EQ(r.run().run_id, "full");
    EXPECT_GT(r.event_count(), 0);
  }
}

}  // namespace
}  // namespace pw

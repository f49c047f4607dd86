#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "db/run_reader.h"
#include "db/run_writer.h"
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

}  // namespace
}  // namespace pw

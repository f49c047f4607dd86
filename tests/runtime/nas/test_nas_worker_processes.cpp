// WorkerProcesses (runtime/worker_processes.h), which the supernet launcher
// and the pipeline coordinator share since issue 42: each worker's end
// reported once with how it ended, a stopped worker reported as stopped and
// then killed without a second report, an abort that kills a worker
// ignoring SIGTERM once its grace is over, and no child left behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "runtime/worker_processes.h"

using pw::rt::ChildExit;
using pw::rt::WorkerProcesses;

namespace {
pid_t sh(const std::string& script) { return pw::rt::spawn_child({"/bin/sh", "-c", script}); }

// Polls until no worker runs (bounded by a count of polls, not by time).
std::vector<std::pair<int, ChildExit>> reap_all(WorkerProcesses& w, bool report_stopped = false) {
  std::vector<std::pair<int, ChildExit>> all;
  for (int i = 0; i < 3000 && w.running() > 0; ++i) {
    for (auto& e : w.reap_ended(report_stopped)) all.push_back(e);
    w.enforce_abort();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return all;
}
}  // namespace

TEST(NasWorkerProcesses, EachEndIsReportedOnceWithHowItEnded) {
  WorkerProcesses w;
  w.add(sh("exit 0"));
  w.add(sh("exit 3"));
  w.add(sh("kill -9 $$"));
  auto ended = reap_all(w);
  ASSERT_EQ(ended.size(), 3u);
  std::map<int, ChildExit> by_index(ended.begin(), ended.end());
  EXPECT_TRUE(by_index.at(0).ok());
  EXPECT_EQ(by_index.at(1).code, 3);
  EXPECT_EQ(by_index.at(2).signal, SIGKILL);
  EXPECT_TRUE(w.reap_ended().empty()) << "nothing is reported twice";
}

TEST(NasWorkerProcesses, AStoppedWorkerIsReportedOnceAndKilled) {
  WorkerProcesses w;
  const pid_t p = sh("kill -STOP $$; exec sleep 60");
  w.add(p);
  auto ended = reap_all(w, /*report_stopped=*/true);
  ASSERT_EQ(ended.size(), 1u) << "its end after the kill is not news";
  EXPECT_EQ(ended[0].second.stopped, SIGSTOP);
  EXPECT_EQ(w.running(), 0);
  EXPECT_NE(kill(p, 0), 0) << "reaped: no zombie left";
}

TEST(NasWorkerProcesses, AnAbortKillsWhatIgnoresSigtermAfterTheGrace) {
  WorkerProcesses w;
  w.add(sh("trap '' TERM; exec sleep 60"));
  w.add(sh("exec sleep 60"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the trap is set
  w.abort(0.2);
  EXPECT_TRUE(w.aborting());
  auto ended = reap_all(w);
  ASSERT_EQ(ended.size(), 2u);
  std::map<int, ChildExit> by_index(ended.begin(), ended.end());
  EXPECT_EQ(by_index.at(0).signal, SIGKILL) << "it ignored SIGTERM";
  EXPECT_EQ(by_index.at(1).signal, SIGTERM);
}

TEST(NasWorkerProcesses, NoChildOutlivesTheGroup) {
  pid_t p;
  {
    WorkerProcesses w;
    p = sh("exec sleep 60");
    w.add(p);
  }
  EXPECT_NE(kill(p, 0), 0);
  EXPECT_LT(waitpid(p, nullptr, WNOHANG), 0) << "already reaped";
}

TEST(NasWorkerProcesses, StopAllTellsHowEachEnded) {
  WorkerProcesses w;
  w.add(sh("exit 0"));
  w.add(sh("trap '' TERM; exec sleep 60"));
  std::vector<std::pair<int, ChildExit>> told;
  w.stop_all(0.3, [&](int r, const ChildExit& x) { told.emplace_back(r, x); });
  ASSERT_EQ(told.size(), 2u);
  EXPECT_TRUE(told[0].second.ok());
  EXPECT_TRUE(told[1].second.forced);
  EXPECT_EQ(w.running(), 0);
}

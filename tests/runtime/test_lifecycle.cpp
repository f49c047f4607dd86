// Process lifecycle: a dead worker or Ctrl-C stops the whole run, fast,
// with no process left behind; bad data fields are named.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "core/spec/spec_error.h"
#include "run_helpers.h"
#include "../timing_checks.h"

namespace pw::rt {
namespace {
using namespace testing;
using Clock = std::chrono::steady_clock;

std::vector<pid_t> children() {
  std::vector<pid_t> out;
  for (auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state;
    int ppid;
    if (sscanf(stat.c_str() + close + 2, "%c %d", &state, &ppid) == 2 && ppid == getpid() && state != 'Z')
      out.push_back(std::stoi(name));
  }
  return out;
}

// A run long enough to be interrupted.
nlohmann::json long_job() { return mlp_job(3, 3, "1f1b", {64, 64, 64}, 1000000); }

std::vector<pid_t> wait_for_workers(size_t n) {
  for (int i = 0; i < 200; ++i) {
    auto c = children();
    if (c.size() >= n) return c;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return children();
}

TEST(Lifecycle, KillingOneWorkerStopsTheRunWithinTwoSeconds) {
  std::string dir = temp_dir("kill");
  auto fut = std::async(std::launch::async, [&] { return run_job(options(long_job(), dir)); });
  auto pids = wait_for_workers(3);
  ASSERT_EQ(pids.size(), 3u);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // training is under way
  auto t0 = Clock::now();
  kill(pids[1], SIGKILL);
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  RunResult r = fut.get();
  double took = std::chrono::duration<double>(Clock::now() - t0).count();
  if (::pw::test::timing_checks()) EXPECT_LT(took, 2.0 + 1.0);  // noticed within 2 s, plus stopping the others
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.error.find("killed by signal 9"), std::string::npos) << r.error;
  EXPECT_TRUE(children().empty());
  std::filesystem::remove_all(dir);
}

TEST(Lifecycle, InterruptStopsEveryWorker) {
  // The command owning the process's signals (cli/interrupt.h) answers the
  // coordinator's probe; here the test does, as SIGTERM would.
  std::string dir = temp_dir("int");
  std::atomic<int> signal_seen{0};
  RunOptions o = options(long_job(), dir);
  o.interrupted = [&] { return signal_seen.load(); };
  auto fut = std::async(std::launch::async, [&] { return run_job(o); });
  ASSERT_EQ(wait_for_workers(3).size(), 3u);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  signal_seen = SIGTERM;
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  RunResult r = fut.get();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_EQ(r.interrupted_by, SIGTERM);
  EXPECT_NE(r.error.find("interrupted by SIGTERM"), std::string::npos) << r.error;
  EXPECT_TRUE(children().empty());
  std::filesystem::remove_all(dir);
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

TEST(Lifecycle, AttachesToWorkersStartedByALauncher) {
  int port = free_port();
  std::string dir = temp_dir("attach");
  RunOptions o = options(mlp_job(2, 2, "1f1b"), dir);
  o.attach = true;
  o.port = port;
  auto fut = std::async(std::launch::async, [&] { return run_job(o); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    pid_t p = fork();
    if (p == 0) {
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", "2", 1);
      execl(PW_WORKER_BIN, PW_WORKER_BIN, static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(p);
  }
  RunResult r = fut.get();
  EXPECT_EQ(r.exit_code, 0) << r.error;
  EXPECT_EQ(r.losses.size(), 3u);
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::filesystem::remove_all(dir);
}

TEST(Lifecycle, BadDataFieldIsNamed) {
  auto doc = mlp_job(2, 2, "1f1b");
  doc["data"] = {{"kind", "fashion-mnist"}};
  try {
    run_job(options(doc, ""));
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "model.input");
  }
  doc["data"] = {{"kind", "synthetic"}, {"sampels", 3}};
  try {
    run_job(options(doc, ""));
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "data.sampels");
  }
}

}  // namespace
}  // namespace pw::rt

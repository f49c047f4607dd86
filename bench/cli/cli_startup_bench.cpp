// Start-up of the command line: each command run as a whole process, again
// and again, pipewright (core, db, ipc) against pipewright-train (the same
// commands with libtorch linked, as pipewright was before the split), in
// turn, so a machine that drifts slows both. Prints the median wall time,
// the peak resident memory and new/old ratios; the goal (issue 42) is under
// 50 ms and 40 MB for --version, plan and simulate, printed, not asserted.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_quick.h"

extern char** environ;

namespace {

struct Sample {
  double wall_ms = 0;
  double peak_mib = 0;
};

// One run with stdout and stderr to /dev/null; throws unless it exits 0.
Sample run_once(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int err = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) throw std::runtime_error("cannot start " + argv[0]);
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) throw std::runtime_error("lost " + argv[0]);
  const auto t1 = std::chrono::steady_clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += " " + a;
    throw std::runtime_error("failed:" + cmd);
  }
  return {std::chrono::duration<double, std::milli>(t1 - t0).count(), ru.ru_maxrss / 1024.0};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main() {
  namespace fs = std::filesystem;
  const std::string cli = PW_CLI;
  const std::string train = (fs::path(cli).parent_path() / "pipewright-train").string();
  const bool have_train = fs::exists(train);
  const std::string job = std::string(PW_SOURCE_DIR) + "/resources/jobs/uniform-8stage.json";
  const int runs = pw::bench::quick_or(3, 15);
  const std::vector<std::vector<std::string>> cases = {
      {"--version"}, {"plan", job}, {"simulate", job}, {"run", "--help"}};

  std::printf("command start-up, median of %d runs each (after one warm-up), whole processes\n", runs);
  std::printf("  new: %s\n  old: %s%s\n\n", cli.c_str(), train.c_str(),
              have_train ? " (links libtorch, as pipewright did before the split)" : " (absent: no runtime here)");
  std::printf("  %-24s %9s %9s %9s %9s %9s %9s\n", "command", "new ms", "old ms", "new/old", "new MiB", "old MiB",
              "new/old");
  for (const auto& args : cases) {
    const bool forwarded = args[0] == "run";
    if (forwarded && !have_train) continue;
    std::vector<std::string> a_new = {cli}, a_old = {train};
    a_new.insert(a_new.end(), args.begin(), args.end());
    a_old.insert(a_old.end(), args.begin(), args.end());
    run_once(a_new);
    if (have_train) run_once(a_old);
    std::vector<double> wn, wo, mn, mo;
    for (int i = 0; i < runs; ++i) {
      const Sample n = run_once(a_new);
      wn.push_back(n.wall_ms);
      mn.push_back(n.peak_mib);
      if (!have_train) continue;
      const Sample o = run_once(a_old);
      wo.push_back(o.wall_ms);
      mo.push_back(o.peak_mib);
    }
    std::string label = args[0] == "--version" || args[0] == "run" ? args[0] + (args.size() > 1 ? " " + args[1] : "")
                                                                    : args[0] + " uniform-8stage";
    if (have_train)
      std::printf("  %-24s %9.1f %9.1f %9.3f %9.1f %9.1f %9.3f\n", label.c_str(), median(wn), median(wo),
                  median(wn) / median(wo), median(mn), median(mo), median(mn) / median(mo));
    else
      std::printf("  %-24s %9.1f %9s %9s %9.1f\n", label.c_str(), median(wn), "-", "-", median(mn));
  }
  std::printf("\n  goal (issue 42): --version, plan and simulate under 50 ms and 40 MiB in pipewright;\n"
              "  run --help goes through pipewright's exec of pipewright-train: new/old is the hand-over's cost\n");
  return 0;
}

// `pipewright run --resume` for a supernet (CSP) job (issue 31): a run with
// checkpoints whose worker is SIGKILLed mid-run continues from its last
// complete checkpoint and ends with exactly the losses and stage weights of
// an uninterrupted run computed here, and its database holds the whole
// run's subnets and states (the part before the checkpoint carried over,
// on one timeline). A resume that cannot proceed names the field and
// leaves the run directory as it was.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/nas/cache_prediction.h"
#include "core/nas/nas_job.h"
#include "db/run_reader.h"
#include "nas_cli_process.h"

namespace fs = std::filesystem;

using pw::nastest::spawn_cli;
using pw::nastest::wait_exit;

namespace {
const std::string kResumeJob = std::string(PW_SOURCE_DIR) + "/resources/jobs/fmnist-supernet.json";
// Adam: the checkpoint must carry optimizer state and step counts (its bias
// correction) for the losses to match, not only the weights.
const std::vector<std::string> kResumeSets = {"training.iterations=64", "data.train_samples=640", "training.optimizer=adam",
                                        "training.lr=0.01"};
constexpr int kEvery = 8;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_cli(std::vector<std::string> args, const fs::path& dir, const std::string& tag, std::string* out_text = nullptr,
            std::string* err_text = nullptr) {
  const fs::path out = dir / (tag + ".out"), err = dir / (tag + ".err");
  int rc = wait_exit(spawn_cli(std::move(args), out, err));
  if (out_text) *out_text = slurp(out);
  if (err_text) *err_text = slurp(err);
  return rc;
}

std::vector<std::string> with_sets(std::vector<std::string> args) {
  for (const auto& s : kResumeSets) args.insert(args.end(), {"--set", s});
  return args;
}

// The worker processes of a launcher: its children, from /proc.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& d : fs::directory_iterator("/proc")) {
    const std::string name = d.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = slurp(d.path() / "stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(std::stoi(name));
  }
  return out;
}

// Every file under `dir` with its bytes, to show a refused resume changed nothing.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) m[fs::relative(e.path(), dir).string()] = slurp(e.path());
  return m;
}

struct Tmp {
  fs::path dir = fs::temp_directory_path() / ("pw-nas-resume-" + std::to_string(getpid()));
  Tmp() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Tmp() {
    if (!::testing::Test::HasFailure()) fs::remove_all(dir);
  }
};
}  // namespace

TEST(NasResume, KilledWorkerResumesToTheUninterruptedLossesExactly) {
  Tmp tmp;
  const fs::path& dir = tmp.dir;
  auto nj = pw::nas::prepare_nas_job(pw::load_job(kResumeJob, kResumeSets));
  const int n = static_cast<int>(nj.sequence.size());
  ASSERT_EQ(n, 64);

  // The uninterrupted run, without checkpoints (their drains change timing only).
  std::string out, err;
  ASSERT_EQ(run_cli(with_sets({PW_CLI_BIN, "run", kResumeJob, "--run-dir", (dir / "full").string(), "--json", "--quiet"}),
                    dir, "full", &out, &err), 0) << err;
  const auto full = nlohmann::json::parse(out);
  ASSERT_EQ(full.at("losses").size(), static_cast<size_t>(n));

  // The same run with checkpoints, one worker killed once a checkpoint is complete.
  const fs::path cut = dir / "cut";
  pid_t pid = spawn_cli(with_sets({PW_CLI_BIN, "run", kResumeJob, "--run-dir", cut.string(), "--checkpoint-every",
                                   std::to_string(kEvery), "--db", (dir / "cut.sqlite").string(), "--quiet"}),
                        dir / "cut.out", dir / "cut.err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(cut / "checkpoint" / "meta.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(cut / "checkpoint" / "meta.json")) << slurp(dir / "cut.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the checkpoint, into the next stretch
  auto workers = children_of(pid);
  ASSERT_EQ(workers.size(), 2u) << "the run ended before the fault: " << slurp(dir / "cut.err");
  ASSERT_EQ(kill(workers.back(), SIGKILL), 0);
  ASSERT_EQ(wait_exit(pid), 1);
  EXPECT_NE(slurp(dir / "cut.err").find("killed by signal 9"), std::string::npos) << slurp(dir / "cut.err");
  const auto meta = nlohmann::json::parse(slurp(cut / "checkpoint" / "meta.json"));
  const int k = meta.at("subnet").get<int>();
  ASSERT_GT(k, 0);
  ASSERT_LT(k, n) << "the kill must land before the end";
  EXPECT_EQ(k % kEvery, 0);

  // Refused resumes first: exit 2 naming the field, the directory untouched.
  const auto before = snapshot(cut);
  ASSERT_EQ(run_cli({PW_CLI_BIN, "run", "--resume", cut.string(), "--set", "search_space.kernels=[3,5]", "--quiet"}, dir,
                    "refuse1", nullptr, &err), 2);
  EXPECT_NE(err.find("search_space.kernels: differs from the checkpoint's [3,5,7]"), std::string::npos) << err;
  ASSERT_EQ(run_cli({PW_CLI_BIN, "run", "--resume", cut.string(), "--set", "training.seed=2", "--quiet"}, dir,
                    "refuse2", nullptr, &err), 2);
  EXPECT_NE(err.find("training.seed: differs from the checkpoint's 1"), std::string::npos) << err;
  ASSERT_EQ(run_cli({PW_CLI_BIN, "run", "--resume", cut.string(), "--set", "training.iterations=" + std::to_string(k),
                     "--quiet"}, dir, "refuse3", nullptr, &err), 2);
  EXPECT_NE(err.find("training.iterations: "), std::string::npos) << err;
  EXPECT_EQ(snapshot(cut), before) << "a refused resume changed the run directory";

  // The resume: the job comes from the run directory (its job.json keeps
  // the --set values), the losses are bitwise the uninterrupted run's.
  const std::string db = (dir / "resumed.sqlite").string();
  ASSERT_EQ(run_cli({PW_CLI_BIN, "run", "--resume", cut.string(), "--checkpoint-every", std::to_string(kEvery), "--db", db,
                     "--json", "--quiet"}, dir, "resume", &out, &err), 0) << err;
  const auto resumed = nlohmann::json::parse(out);
  EXPECT_EQ(resumed.at("start_subnet").get<int>(), k);
  ASSERT_EQ(resumed.at("losses").size(), static_cast<size_t>(n));
  for (int b = 0; b < n; ++b)
    EXPECT_EQ(resumed["losses"][b].get<double>(), full["losses"][b].get<double>()) << "subnet " << b << " (resumed at " << k << ")";
  EXPECT_EQ(resumed.at("stage_hashes"), full.at("stage_hashes"));

  // The database: every subnet of the run, done once, forward and backward at
  // both stages; the part before the checkpoint precedes the rest in time.
  pw::db::RunReader rd(db);
  auto subnets = rd.subnets();
  ASSERT_EQ(static_cast<int>(subnets.size()), n);
  for (int b = 0; b < n; ++b) EXPECT_EQ(subnets.at(b).get<std::vector<int>>(), nj.sequence[b]) << "subnet " << b;
  std::map<int, int> done;
  std::set<std::pair<int, int>> forward, backward;
  std::int64_t last_before = -1, first_after = -1;
  for (const auto& st : rd.subnet_states()) {
    if (st.phase == pw::SubnetPhase::Done) done[st.subnet]++;
    if (st.phase == pw::SubnetPhase::Forward) forward.insert({st.subnet, st.stage});
    if (st.phase == pw::SubnetPhase::Backward) backward.insert({st.subnet, st.stage});
    if (st.subnet < k) last_before = std::max(last_before, st.t_ns);
    else if (first_after < 0 || st.t_ns < first_after) first_after = st.t_ns;
  }
  EXPECT_EQ(static_cast<int>(done.size()), n);
  for (const auto& [b, times] : done) EXPECT_EQ(times, 1) << "subnet " << b << " done " << times << " times";
  for (int b = 0; b < n; ++b)
    for (int s = 0; s < 2; ++s) EXPECT_TRUE(forward.count({b, s}) && backward.count({b, s})) << b << " at " << s;
  EXPECT_LT(last_before, first_after) << "the resumed part should continue the checkpoint's timeline";
  // The finished run's newest checkpoint replaced the one it resumed from.
  const auto meta_after = nlohmann::json::parse(slurp(cut / "checkpoint" / "meta.json"));
  EXPECT_GT(meta_after.at("subnet").get<int>(), k);
  EXPECT_FALSE(fs::exists(cut / "checkpoint" / std::to_string(k)));
  // Whatever a write cut off by the kill left (a SIGKILLed writer cannot
  // remove its temporary file), the resume leaves none.
  for (const auto& e : fs::recursive_directory_iterator(cut))
    EXPECT_NE(e.path().extension(), ".tmp") << "a temporary file was left: " << e.path();
}

// With a device budget of a third of the slice, both stages run a device
// cache: the checkpoint saves each candidate from wherever it is (device or
// host store), the resumed stage rebuilds the cache by carrying out the
// plan's steps before the checkpoint again, and the result is still the
// uninterrupted run's, bit for bit, with the cache counts the simulator
// predicts for the whole run.
TEST(NasResume, WithADeviceCacheTheResumedRunIsTheUninterruptedOne) {
  Tmp tmp;
  const fs::path& dir = tmp.dir;
  std::vector<std::string> sets = {"training.iterations=40", "data.train_samples=1280", "search_space.kernels=[3,5]",
                                   "search_space.widths=[8,12,16,20,24]", "training.optimizer=adam",
                                   "training.lr=0.01"};
  auto nj = pw::nas::prepare_nas_job(pw::load_job(kResumeJob, sets));
  auto slice = pw::nas::supernet_slice_bytes(nj);
  char budget[64];
  std::snprintf(budget, sizeof budget, "%.17g", std::max(slice[0], slice[1]) / 3 / (1024.0 * 1024 * 1024));
  sets.push_back(std::string("search_space.device_budget_gb=") + budget);
  nj = pw::nas::prepare_nas_job(pw::load_job(kResumeJob, sets));
  auto active = pw::nas::stage_cache_active(nj);
  ASSERT_TRUE(active[0] && active[1]);
  auto with = [&](std::vector<std::string> args) {
    for (const auto& x : sets) args.insert(args.end(), {"--set", x});
    return args;
  };
  std::string out, err;
  ASSERT_EQ(run_cli(with({PW_CLI_BIN, "run", kResumeJob, "--run-dir", (dir / "full").string(), "--json", "--quiet"}), dir,
                    "full", &out, &err), 0) << err;
  const auto full = nlohmann::json::parse(out);

  const fs::path cut = dir / "cut";
  pid_t pid = spawn_cli(with({PW_CLI_BIN, "run", kResumeJob, "--run-dir", cut.string(), "--checkpoint-every", "8", "--quiet"}),
                        dir / "cut.out", dir / "cut.err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(cut / "checkpoint" / "meta.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(cut / "checkpoint" / "meta.json")) << slurp(dir / "cut.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto workers = children_of(pid);
  ASSERT_EQ(workers.size(), 2u) << "the run ended before the fault: " << slurp(dir / "cut.err");
  ASSERT_EQ(kill(workers.front(), SIGKILL), 0);
  ASSERT_EQ(wait_exit(pid), 1);
  const int k = nlohmann::json::parse(slurp(cut / "checkpoint" / "meta.json")).at("subnet").get<int>();
  ASSERT_GT(k, 0);
  ASSERT_LT(k, 40);

  ASSERT_EQ(run_cli({PW_CLI_BIN, "run", "--resume", cut.string(), "--json", "--quiet"}, dir, "resume", &out, &err), 0)
      << err;
  const auto resumed = nlohmann::json::parse(out);
  EXPECT_EQ(resumed.at("start_subnet").get<int>(), k);
  ASSERT_EQ(resumed.at("losses").size(), full.at("losses").size());
  for (size_t b = 0; b < full["losses"].size(); ++b)
    EXPECT_EQ(resumed["losses"][b].get<double>(), full["losses"][b].get<double>()) << "subnet " << b << " (resumed at " << k << ")";
  EXPECT_EQ(resumed.at("stage_hashes"), full.at("stage_hashes"));
  // The cache evicted and reloaded on both stages, and its counts over the
  // two launches are the whole run's prediction.
  const auto& stages = resumed.at("device_cache").at("stages");
  ASSERT_EQ(stages.size(), 2u);
  for (const auto& st : stages) {
    SCOPED_TRACE("stage " + st.at("stage").dump());
    ASSERT_FALSE(st.at("measured").is_null());
    EXPECT_GT(st["measured"]["evictions"].get<std::uint64_t>(), 4u);
    for (const char* f : {"uses", "hits", "loads", "evictions"})
      EXPECT_EQ(st["measured"][f].get<std::uint64_t>(), st["predicted"][f].get<std::uint64_t>()) << f;
  }
}

TEST(NasResume, NoCheckpointIsNamed) {
  // A run directory as a run without --checkpoint-every leaves it: its job, no checkpoint.
  Tmp tmp;
  fs::create_directories(tmp.dir / "plain");
  fs::copy_file(kResumeJob, tmp.dir / "plain" / "job.json");
  std::string err;
  // A refusal (issue 41): nothing was started or written.
  EXPECT_EQ(run_cli({PW_CLI_BIN, "run", "--resume", (tmp.dir / "plain").string(), "--quiet"}, tmp.dir, "resume", nullptr,
                    &err), 2);
  EXPECT_NE(err.find((tmp.dir / "plain").string() + ": no checkpoint (checkpoint/meta.json) to resume from"),
            std::string::npos) << err;
}

// A real 2-worker supernet run through `pipewright run JOB --db F` records
// the studio's dependency data: per subnet its states (queued, forward and
// backward per stage, blocked, done) and the CSP wait edges "b waits for w
// because of layer l at stage s". Each edge is checked against the subnet
// sequence, recomputed here from the job (not from the recorder), and
// against the recorded states. Its memory samples per stage and throughput
// per subnet are there as a pipeline run's are.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/nas/nas_job.h"
#include "db/run_reader.h"
#include "nas_cli_process.h"

namespace {
const std::string kRecordsJob = std::string(PW_SOURCE_DIR) + "/resources/jobs/fmnist-supernet.json";
const std::vector<std::string> kRecordsSets = {"training.iterations=24", "data.train_samples=1024"};

int run_cli(std::vector<std::string> args) {
  return pw::nastest::wait_exit(pw::nastest::spawn_cli(std::move(args)));
}
}  // namespace

TEST(NasRunRecords, RealTwoWorkerRunWritesStatesAndEdgesIntoItsDatabase) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("pw-nas-records-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string db = (dir / "run.sqlite").string();
  std::vector<std::string> args = {PW_CLI_BIN, "run", kRecordsJob, "--db", db, "--run-dir", (dir / "run").string(), "--quiet"};
  for (const auto& s : kRecordsSets) args.insert(args.end(), {"--set", s});
  ASSERT_EQ(run_cli(args), 0);

  // The sequence and partition, from the job itself.
  std::vector<std::string> sets = kRecordsSets;
  auto nj = pw::nas::prepare_nas_job(pw::load_job(kRecordsJob, sets));
  ASSERT_EQ(nj.stages.size(), 2u);
  const int n = static_cast<int>(nj.sequence.size());

  pw::db::RunReader rd(db);
  auto subnets = rd.subnets();
  ASSERT_EQ(static_cast<int>(subnets.size()), n);
  for (int b = 0; b < n; ++b) EXPECT_EQ(subnets.at(b).get<std::vector<int>>(), nj.sequence[b]) << "subnet " << b;

  // First forward and first backward start per (subnet, stage); done per subnet.
  std::map<std::pair<int, int>, std::int64_t> fwd, bwd;
  std::set<int> done;
  for (const auto& st : rd.subnet_states()) {
    auto key = std::make_pair(st.subnet, st.stage);
    if (st.phase == pw::SubnetPhase::Forward && !fwd.count(key)) fwd[key] = st.t_ns;
    if (st.phase == pw::SubnetPhase::Backward && !bwd.count(key)) bwd[key] = st.t_ns;
    if (st.phase == pw::SubnetPhase::Done) done.insert(st.subnet);
  }
  EXPECT_EQ(static_cast<int>(done.size()), n);
  auto F = [&](int b, int s) { return fwd.count({b, s}) ? fwd.at({b, s}) : -1; };
  auto B = [&](int b, int s) { return bwd.count({b, s}) ? bwd.at({b, s}) : -1; };
  for (int b = 0; b < n; ++b)
    for (int s = 0; s < 2; ++s) {
      ASSERT_TRUE(fwd.count({b, s}) && bwd.count({b, s})) << "subnet " << b << " stage " << s;
      EXPECT_LE(F(b, s), B(b, s));
    }

  auto edges = rd.subnet_edges();
  ASSERT_GT(edges.size(), 0u) << "4 choice layers of 7 candidates, window 8: subnets must wait";
  for (const auto& e : edges) {
    SCOPED_TRACE("edge " + std::to_string(e.waiter) + " waits for " + std::to_string(e.waited_for) + " at stage " +
                 std::to_string(e.stage) + " layer " + std::to_string(e.layer));
    ASSERT_TRUE(e.stage == 0 || e.stage == 1);
    const auto& slots = nj.stages[e.stage];
    EXPECT_LT(e.waited_for, e.waiter);
    EXPECT_GE(e.layer, slots.first);
    EXPECT_LE(e.layer, slots.last);
    // The shared candidate: the first layer of the stage where both chose alike.
    int first_shared = -1;
    for (int l = slots.first; l <= slots.last && first_shared < 0; ++l)
      if (nj.sequence[e.waiter][l] == nj.sequence[e.waited_for][l]) first_shared = l;
    EXPECT_EQ(e.layer, first_shared);
    // The blocker had not finished at that stage (its backward came later)...
    EXPECT_GE(B(e.waited_for, e.stage), e.t_ns);
    // ...every earlier conflicting subnet had (CSP names the oldest unfinished one)...
    for (int w = 0; w < e.waited_for; ++w) {
      bool conflict = false;
      for (int l = slots.first; l <= slots.last; ++l) conflict |= nj.sequence[w][l] == nj.sequence[e.waiter][l];
      if (conflict) EXPECT_LE(B(w, e.stage), e.t_ns) << "older conflicting subnet " << w;
    }
    // ...and the waiter ran there only after the blocker's backward (and update).
    EXPECT_GT(F(e.waiter, e.stage), B(e.waited_for, e.stage));
    if (e.resolved_ns >= 0) EXPECT_GE(e.resolved_ns, e.t_ns);
  }

  // What a pipeline run's recording carries too (issue 42), so the studio's
  // memory panel and throughput plot work for a supernet run: each stage's
  // resident bytes over the run, and a throughput sample per subnet.
  std::map<int, std::vector<pw::MemorySample>> memory;
  rd.for_each_memory([&](const pw::MemorySample& m) { memory[m.stage].push_back(m); });
  ASSERT_EQ(memory.size(), 2u) << "memory samples from both stages";
  for (const auto& [stage, samples] : memory) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    std::int64_t low = samples.front().bytes, high = low;
    for (const auto& m : samples) {
      EXPECT_GT(m.bytes, 0);
      low = std::min(low, m.bytes);
      high = std::max(high, m.bytes);
    }
    // Activations of subnets in flight come and go above the candidates.
    EXPECT_GT(samples.size(), 2u);
    EXPECT_GT(high, low) << "a flat memory line";
  }
  auto throughput = rd.throughput();
  ASSERT_EQ(static_cast<int>(throughput.size()), n) << "one throughput sample per finished subnet";
  std::set<std::int64_t> ids;
  for (size_t i = 0; i < throughput.size(); ++i) {
    ids.insert(throughput[i].iteration);
    if (i > 0) {
      EXPECT_GE(throughput[i].t_ns, throughput[i - 1].t_ns);
      EXPECT_GT(throughput[i].samples_per_s, 0) << i;
    }
  }
  EXPECT_EQ(static_cast<int>(ids.size()), n);
  fs::remove_all(dir);
}

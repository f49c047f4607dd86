// Evolutionary search over a supernet trained by the CSP pipeline (issue 7):
// the stages' saved candidates rebuild the trained supernet exactly, the
// search is deterministic, and it does at least as well as random search
// with the same number of validation evaluations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/nas/nas_job.h"
#include "runtime/nas/csp_launch.h"
#include "runtime/nas/supernet_modules.h"
#include "runtime/nas/supernet_search.h"

using namespace pw::rt::nas;

TEST(NasSearch, EvolutionOverTheTrainedSupernetIsDeterministicAndBeatsRandom) {
  const std::string job = std::string(PW_SOURCE_DIR) + "/resources/jobs/fmnist-supernet.json";
  const std::vector<std::string> sets = {"training.iterations=150", "data.train_samples=4800", "data.test_samples=300"};
  CspLaunch l;
  l.worker_binary = PW_NAS_WORKER_BIN;
  l.job_file = job;
  l.overrides = sets;
  l.workers = 2;
  l.out_dir = (std::filesystem::temp_directory_path() / ("pw-nas-search-" + std::to_string(getpid()))).string();
  auto run = launch_csp_run(l);
  ASSERT_EQ(run.subnets, 150);

  // The saved candidates are the trained ones: same hashes as the stages reported.
  auto nj = pw::nas::prepare_nas_job(pw::load_job(job, {sets[0], sets[1], sets[2], "pipeline.stages=2"}));
  CnnSupernet full(nj.job, nj.space, pw::nas::StageSlots{0, nj.space.size() - 1});
  for (int r = 0; r < 2; ++r) {
    full.load(l.out_dir + "/stage" + std::to_string(r) + ".bin", nj.stages[r].first, nj.stages[r].last);
    EXPECT_EQ(full.hash_range(nj.stages[r].first, nj.stages[r].last), run.stage_hashes[r]) << "stage " << r;
  }
  // A file for other layers (here: one stage's file for the whole supernet) is refused.
  EXPECT_THROW(full.load(l.out_dir + "/stage0.bin", 0, nj.space.size() - 1), std::runtime_error);

  std::vector<std::string> search_sets = sets;
  search_sets.push_back("search_space.search.evaluations=24");
  search_sets.push_back("search_space.search.population=8");
  auto a = search_trained_supernet(job, search_sets, l.out_dir);
  auto b = search_trained_supernet(job, search_sets, l.out_dir);
  std::filesystem::remove_all(l.out_dir);

  EXPECT_EQ(a.validation_samples, 300);
  ASSERT_EQ(a.evolution.evaluations, 24);
  ASSERT_EQ(a.random.evaluations, 24);
  EXPECT_EQ(a.evolution.best, b.evolution.best);
  EXPECT_EQ(a.evolution.best_score, b.evolution.best_score);
  ASSERT_EQ(a.evolution.scored.size(), b.evolution.scored.size());
  for (size_t i = 0; i < a.evolution.scored.size(); ++i) EXPECT_EQ(a.evolution.scored[i], b.evolution.scored[i]) << i;
  EXPECT_GE(a.evolution.best_score, a.random.best_score);
  // Trained: well above the 10% of chance on ten classes.
  EXPECT_GT(a.evolution.best_score, 0.3);
}

// The CSP trainer's device cache (runtime/nas/device_cache.h): a budget of
// a third of each stage's slice trains bitwise the weights of a run that
// holds everything, optimizer state included; its measured hits and loads
// are the simulator's prediction exactly; one tiny case is worked by hand.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/nas/cache_prediction.h"
#include "core/nas/device_cache_plan.h"
#include "core/nas/nas_job.h"
#include "core/spec/spec_error.h"
#include "runtime/nas/csp_launch.h"
#include "runtime/nas/device_cache.h"
#include "runtime/nas/supernet_modules.h"

using namespace pw::rt::nas;

namespace {
const std::string kCacheJob = std::string(PW_SOURCE_DIR) + "/resources/jobs/fmnist-supernet.json";

std::string cache_tmp(const std::string& tag) {
  return (std::filesystem::temp_directory_path() / ("pw-nas-cache-" + std::to_string(getpid()) + "-" + tag)).string();
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

// 11 candidates a layer (conv 3 and 5 at five widths, identity), 4 layers on
// 2 stages: a third of a slice holds the largest subnet beside the head.
std::vector<std::string> space_sets(const std::string& optimizer, int subnets) {
  return {"training.iterations=" + std::to_string(subnets), "data.train_samples=" + std::to_string(32 * subnets),
          "search_space.kernels=[3,5]", "search_space.widths=[8,12,16,20,24]", "training.optimizer=" + optimizer,
          "training.lr=0.01"};
}

pw::nas::NasJob cache_job(const std::vector<std::string>& sets) {
  auto s = sets;
  s.insert(s.end(), {"pipeline.stages=2", "cluster.devices=2"});
  return pw::nas::prepare_nas_job(pw::load_job(kCacheJob, s));
}

struct CacheRun {
  CspRunResult result;
  std::string dir;
};

CacheRun run(const std::vector<std::string>& sets, const std::string& tag) {
  CspLaunch l;
  l.worker_binary = PW_NAS_WORKER_BIN;
  l.job_file = kCacheJob;
  l.overrides = sets;
  l.workers = 2;
  l.out_dir = cache_tmp(tag);
  return {launch_csp_run(l), l.out_dir};
}

// Every candidate tensor of both runs' saved stages, compared with
// at::equal (bitwise for finite floats).
int unequal_tensors(const pw::nas::NasJob& nj, const std::string& a, const std::string& b) {
  int bad = 0, compared = 0;
  for (size_t s = 0; s < nj.stages.size(); ++s) {
    CnnSupernet na(nj.job, nj.space, nj.stages[s]), nb(nj.job, nj.space, nj.stages[s]);
    const std::string file = "/stage" + std::to_string(s) + ".bin";
    na.load(a + file, nj.stages[s].first, nj.stages[s].last);
    nb.load(b + file, nj.stages[s].first, nj.stages[s].last);
    for (int l = nj.stages[s].first; l <= nj.stages[s].last; ++l)
      for (int c = 0; c < na.choices(l); ++c)
        for (size_t i = 0; i < na.candidate(l, c).params.size(); ++i) {
          ++compared;
          bad += !at::equal(na.candidate(l, c).params[i], nb.candidate(l, c).params[i]);
        }
  }
  EXPECT_GT(compared, 0);
  return bad;
}
}  // namespace

TEST(NasDeviceCache, AThirdOfTheSliceTrainsTheUnlimitedWeightsBitwiseWithOptimizerState) {
  for (const std::string opt : {"adam", "momentum"}) {
    SCOPED_TRACE(opt);
    auto sets = space_sets(opt, 24);
    auto nj = cache_job(sets);
    auto slice = pw::nas::supernet_slice_bytes(nj);
    const double third = std::max(slice[0], slice[1]) / 3;
    auto limited_sets = sets;
    limited_sets.push_back("search_space.device_budget_gb=" + gib(third));
    auto limited_nj = cache_job(limited_sets);
    auto active = pw::nas::stage_cache_active(limited_nj);
    ASSERT_TRUE(active[0] && active[1]);

    CacheRun full = run(sets, opt + "-full"), limited = run(limited_sets, opt + "-third");
    // The unlimited run holds everything (no cache); the limited one
    // evicted and reloaded candidates (with their moments) many times.
    EXPECT_FALSE(full.result.device_cache.at(0).has_value());
    ASSERT_TRUE(limited.result.device_cache.at(0).has_value());
    for (int s = 0; s < 2; ++s) {
      const auto& f = *limited.result.device_cache.at(s);
      EXPECT_GT(f.evictions, 8u) << s;
      EXPECT_GT(f.loads, 16u) << s;
    }
    EXPECT_EQ(limited.result.stage_hashes, full.result.stage_hashes);
    EXPECT_EQ(unequal_tensors(nj, full.dir, limited.dir), 0);
    ASSERT_EQ(limited.result.losses.size(), full.result.losses.size());
    for (size_t i = 0; i < full.result.losses.size(); ++i)
      EXPECT_EQ(limited.result.losses[i], full.result.losses[i]) << "subnet " << i;

    // Measured against the simulator's prediction for the same job: the
    // counts are the same (the plan does not depend on timing).
    auto predicted = pw::nas::predict_device_cache(limited_nj);
    for (int s = 0; s < 2; ++s) {
      const auto& m = *limited.result.device_cache.at(s);
      const auto& p = predicted.stages.at(s);
      EXPECT_EQ(m.uses, p.uses) << s;
      EXPECT_EQ(m.hits, p.hits) << s;
      EXPECT_EQ(m.loads, p.loads) << s;
      EXPECT_EQ(m.evictions, p.evictions) << s;
      EXPECT_DOUBLE_EQ(m.load_bytes, p.load_bytes) << s;
    }
    std::filesystem::remove_all(full.dir);
    std::filesystem::remove_all(limited.dir);
  }
}

TEST(NasDeviceCache, ThreeCandidatesRoomForTwoWorkedByHand) {
  // One choice layer per stage, candidates conv 3x3 at widths 8 / 12 / 16
  // (A / B / C: 1304 / 1948 / 2592 parameters, 8 bytes each with gradients
  // under SGD: 10432 / 15584 / 20736 bytes). Budget 165000 bytes: stage 0
  // (the 640-byte stem) holds all three and runs without a cache; stage 1
  // has 165000 - 125480 (the head) = 39520 bytes: room for any two, not for
  // three. Layer 1 follows A B C A B. By hand (Belady): load A, load B; C
  // must evict one: B (next use step 4) rather than A (step 3); A hits; B:
  // neither A nor C is used again, the least recently used goes (C, step
  // 2). 5 uses, 1 hit, 4 loads, 2 evictions, 5216 + 7792 + 10368 + 7792 =
  // 31168 bytes of weights moved.
  const std::string list = cache_tmp("list.txt");
  std::ofstream(list) << "0 0\n1 1\n2 2\n0 0\n2 1\n";
  std::vector<std::string> sets = {"training.iterations=5", "data.train_samples=160", "search_space.choice_layers=2",
                                   "search_space.kernels=[3]", "search_space.widths=[8,12,16]",
                                   "search_space.skip=false", "search_space.sampler=\"list\"",
                                   "search_space.subnet_file=\"" + list + "\"",
                                   "search_space.device_budget_gb=" + gib(165000)};
  auto nj = cache_job(sets);
  ASSERT_EQ(nj.stages[1].first, 1);
  EXPECT_EQ(nj.space.layers[1].candidates[0].resident_bytes(), 10432);
  EXPECT_EQ(pw::nas::stage_capacities(nj)[1], 39520);
  auto active = pw::nas::stage_cache_active(nj);
  EXPECT_FALSE(active[0]);
  EXPECT_TRUE(active[1]);

  CacheRun r = run(sets, "hand");
  EXPECT_FALSE(r.result.device_cache.at(0).has_value());
  ASSERT_TRUE(r.result.device_cache.at(1).has_value());
  const auto& f = *r.result.device_cache[1];
  EXPECT_EQ(f.uses, 5u);
  EXPECT_EQ(f.hits, 1u);
  EXPECT_EQ(f.loads, 4u);
  EXPECT_EQ(f.evictions, 2u);
  EXPECT_DOUBLE_EQ(f.load_bytes, 31168);
  std::filesystem::remove_all(r.dir);
  std::filesystem::remove(list);
}

TEST(NasDeviceCache, LoadsAreRealCopiesWithinTheBudgetAndABudgetNoSubnetFitsIsRefused) {
  at::set_num_threads(1);
  auto nj = cache_job(space_sets("adam", 8));
  CnnSupernet net(nj.job, nj.space, nj.stages[0]);
  const auto before = net.candidate(0, 0).params[0].clone();
  auto steps = pw::nas::stage_cache_steps(nj.space, nj.sequence, nj.stages[0]);
  const std::int64_t cap = 3 * nj.space.layers[0].candidates[9].resident_bytes();  // three of the largest
  auto plan = pw::nas::plan_device_cache(steps, cap, pw::nas::Eviction::Belady);
  DeviceCache cache(net, cap, torch::Device(torch::kCPU), [] { return std::int64_t{0}; });
  EXPECT_TRUE(net.candidate(0, 0).params.empty());  // moved into the host store
  for (const auto& st : plan.steps) {
    cache.apply(st);
    EXPECT_LE(cache.device().device_total(), cap);
  }
  EXPECT_LE(cache.peak_device_bytes(), cap);
  EXPECT_EQ(cache.figures().loads, plan.loads);
  // A resident candidate is a separate copy of the host's: training it
  // leaves the host store alone until it is written back.
  const auto& last = plan.steps.back();
  const auto key = last.keys.front();
  auto& dev = net.candidate(pw::nas::key_layer(key), pw::nas::key_choice(key)).params[0];
  {
    at::NoGradGuard ng;
    dev.variable_data().add_(1.0);
  }
  const auto trained = dev.detach().clone();
  cache.flush();
  EXPECT_TRUE(at::equal(net.candidate(pw::nas::key_layer(key), pw::nas::key_choice(key)).params[0], trained));
  if (key != pw::nas::candidate_key(0, 0)) EXPECT_TRUE(at::equal(net.candidate(0, 0).params[0], before));

  // A forged step past the capacity cannot load.
  CnnSupernet net2(nj.job, nj.space, nj.stages[0]);
  DeviceCache small(net2, 1000, torch::Device(torch::kCPU), [] { return std::int64_t{0}; });
  pw::nas::CacheStep forged;
  forged.load = {steps[0][0]};
  forged.keys = {steps[0][0].key};
  if (steps[0][0].resident_bytes > 1000) EXPECT_THROW(small.apply(forged), pw::rt::MemoryBudgetError);

  // A budget below one subnet's candidates is refused before anything runs.
  auto tiny = space_sets("adam", 8);
  tiny.push_back("search_space.device_budget_gb=" + gib(200000));
  try {
    pw::nas::check_device_budget(cache_job(tiny));
    ADD_FAILURE() << "a budget no subnet fits was accepted";
  } catch (const pw::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("search_space.device_budget_gb"), std::string::npos) << e.what();
  }
}

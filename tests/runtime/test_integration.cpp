// Fashion-MNIST with the 2-stage CNN demo: a real learning result, not
// only equal numbers. Label "integration" (minutes).
#include <gtest/gtest.h>

#include <cstdio>

#include "run_helpers.h"

namespace pw::rt {
namespace {
using namespace testing;

TEST(Integration, FashionMnistCnnDemoReachesPublishedSmallCnnAccuracy) {
  JobSpec job = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/demo-fmnist-cnn.json");
  std::string dir = temp_dir("fmnist");
  RunOptions o;
  o.job = job;
  o.run_dir = dir;
  o.worker_binary = PW_WORKER_BIN;
  RunResult r = run_job(o);
  ASSERT_EQ(r.exit_code, 0) << r.error;
  std::printf("Fashion-MNIST test accuracy %.4f after %d iterations\n", r.accuracy, job.training.iterations);
  EXPECT_GE(r.accuracy, 0.89) << "after " << job.training.iterations << " iterations";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw::rt

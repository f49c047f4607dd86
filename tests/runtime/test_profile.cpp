// Measured profiles: the planner's structure, the analytic layer
// boundaries, exact parameter bytes, and a file jobs can plan from.
#include <gtest/gtest.h>

#include "core/job/job_plan.h"
#include "core/model/analytic_profile.h"
#include "core/model/profile_io.h"
#include "run_helpers.h"
#include "runtime/profiler.h"

namespace pw::rt {
namespace {
using namespace testing;

TEST(Profiler, MeasuresEveryAnalyticLayerAndPlansFromTheFile) {
  auto doc = mlp_job(2, 2, "1f1b", {64, 48});
  JobSpec job = parse_job(doc);
  ModelProfile m = measure_profile(job, {3, 1});
  ModelProfile a = analytic_profile(job);
  ASSERT_EQ(m.size(), a.size());
  // Linear in->out, fp32: (in*out + out) * 4 bytes.
  const std::int64_t dims[] = {20, 64, 48, 5};
  for (int l = 0; l < m.size(); ++l) {
    EXPECT_EQ(m.layers[l].name, a.layers[l].name);
    EXPECT_EQ(m.layers[l].param_bytes, std::uint64_t((dims[l] * dims[l + 1] + dims[l + 1]) * 4)) << l;
    EXPECT_EQ(m.layers[l].output_bytes, std::uint64_t(4 * dims[l + 1] * 4)) << l;
    EXPECT_GT(m.layers[l].fwd_ms, 0);
    EXPECT_GT(m.layers[l].bwd_ms, 0);
    EXPECT_GE(m.layers[l].activation_bytes, m.layers[l].input_bytes);
  }
  std::string file = temp_dir("profile") + ".json";
  save_profile_file(m, file);
  job.model.profile = file;
  PreparedJob p = prepare_job(job);
  EXPECT_EQ(p.profile.source, "measured");
  EXPECT_EQ(p.plan.layer_count(), m.size());
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace pw::rt

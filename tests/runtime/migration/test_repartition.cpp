// The stop-the-world path (runtime/migration/repartition.h) on its own: a
// checkpoint written under one partition, rewritten for another, loads into
// stages whose layers hold bitwise the weights the first stages saved. The
// stages are built offline, without a process group, as repartition_checkpoint
// builds its own (a stage's Messenger must accept that: it crashed there once).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <map>

#include "core/model/analytic_profile.h"
#include "core/schedule/schedule.h"
#include "run_helpers.h"
#include "runtime/data.h"
#include "runtime/memory.h"
#include "runtime/migration/repartition.h"
#include "runtime/stage.h"

namespace pw::rt {
namespace {

std::map<std::string, at::Tensor> weights_of(const torch::nn::Sequential& layer, int l) {
  std::map<std::string, at::Tensor> w;
  for (const auto& p : layer->named_parameters()) w[std::to_string(l) + "." + p.key()] = p.value().detach().clone();
  return w;
}

TEST(Repartition, ACheckpointRewrittenForAnotherPartitionLoadsTheSameWeights) {
  JobSpec job = parse_job(testing::mlp_job(2, 2, "1f1b", {32, 32, 32}, 1));
  const int layers = static_cast<int>(analytic_profile(job).layers.size());
  ASSERT_GE(layers, 3);
  Plan from = uniform_partition(layers, 2);
  Plan to = from;
  to.stages = {{0, 0}, {1, layers - 1}};  // all but the first layer move to stage 1
  ASSERT_NE(to.stages[0].last_layer, from.stages[0].last_layer);
  auto sched = make_schedule(job.pipeline.schedule, 2, job.pipeline.microbatches, 1);
  TrainData data(job);
  TensorBytes::install();
  const std::string in = testing::temp_dir("repartition-in"), out = testing::temp_dir("repartition-out");
  std::filesystem::create_directories(in);

  std::map<std::string, at::Tensor> saved;
  for (int d = 0; d < 2; ++d) {
    StageExecutor stage(job, from, *sched, d, {}, data);  // offline: no process group
    for (int l = 0; l < layers; ++l)
      if (stage.layer(l))
        for (auto& [k, v] : weights_of(stage.layer(l), l)) saved[k] = v;
    stage.save(in + "/stage" + std::to_string(d) + ".pt");
  }
  ASSERT_FALSE(saved.empty());

  migration::repartition_checkpoint(job, from, to, in, out);

  std::map<std::string, at::Tensor> loaded;
  for (int d = 0; d < 2; ++d) {
    StageExecutor stage(job, to, *sched, d, {}, data);
    stage.load(out + "/stage" + std::to_string(d) + ".pt");
    for (int l = 0; l < layers; ++l)
      if (stage.layer(l)) {
        EXPECT_EQ(d, l == 0 ? 0 : 1) << "layer " << l << " on the wrong stage";
        for (auto& [k, v] : weights_of(stage.layer(l), l)) loaded[k] = v;
      }
  }
  ASSERT_EQ(loaded.size(), saved.size());
  for (auto& [k, v] : saved) EXPECT_TRUE(at::equal(loaded.at(k), v)) << k;
  std::filesystem::remove_all(in);
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace pw::rt

// parallel.tensor > 1 with a measured profile (issue 40): the attention and
// FFN blocks measured at t = 1 priced as shards by the analytic rule, with
// their all-reduces over the intra-node link; the embedding, the head and
// memory as measured. Against a hand computation on a four-layer profile.
#include <gtest/gtest.h>

#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "core/spec/device.h"
#include "core/spec/job_spec.h"
#include "output_rule_util.h"

using namespace pw;

namespace {

LayerProfile measured(const std::string& name, const std::string& type, double fwd, double bwd, double w) {
  LayerProfile l;
  l.name = name;
  l.type = type;
  l.fwd_ms = fwd;
  l.bwd_ms = bwd;
  l.bwd_weight_ms = w;
  l.activation_bytes = 1000;
  l.param_bytes = 400;
  l.optimizer_bytes = 800;
  l.output_bytes = 100;
  return l;
}

JobSpec tiny_gpt(const std::string& profile, int tensor) {
  nlohmann::json d = {
      {"name", "tiny"},
      {"model",
       {{"kind", "gpt"}, {"precision", "fp16"}, {"layers", 1}, {"hidden", 64}, {"heads", 4}, {"seq_len", 16},
        {"vocab", 100}, {"profile", profile}, {"profile_device", "a100-80g"}}},
      {"training", {{"batch_size", 4}, {"microbatch_size", 2}}},
      {"cluster", {{"devices", 2}, {"device", "a100-80g"}, {"gpus_per_node", 2}}},
      {"pipeline", {{"stages", 1}}},
      {"parallel", {{"tensor", tensor}}}};
  return parse_job(d);
}

}  // namespace

TEST(MeasuredTensor, BlocksSplitByTheAnalyticRuleWithTheirAllReduces) {
  test::TempDir dir("pw-measured-tensor");
  ModelProfile p;
  p.microbatch_size = 2;
  p.device = "a100-80g";
  p.source = "measured";
  p.layers = {measured("embedding", "embedding", 0.5, 1.0, 1.0), measured("h0.attn", "attention", 3.0, 6.0, 2.0),
              measured("h0.ffn", "ffn", 4.0, 8.0, 4.0), measured("head", "head", 2.0, 4.0, 2.0)};
  const std::string path = dir.file("tiny.profile.json");
  save_profile_file(p, path);

  const ModelProfile whole = job_profile(tiny_gpt(path, 1));
  const ModelProfile split = job_profile(tiny_gpt(path, 2));
  ASSERT_EQ(split.size(), 4);

  // By hand, a100-80g: dispatch 5 us a kernel (one forward, two backward);
  // a phase measured T ms takes (T - dispatches) / t + dispatches on a
  // shard of t = 2. One all-reduce: an [s, b, h] fp16 activation, 2 x 2 x
  // 16 x 64 = 4096 bytes, a ring of two over NVLink 3 one way (the
  // datasheet's 600 GB/s is both directions: 300 GB/s = 2400 Gbit/s) with
  // 6 us latency: 2 (t - 1) / t x 4096 x 8 / 2400e9 s + 2 (t - 1) x 6 us.
  const DeviceSpec a100 = *device_preset("a100-80g");
  ASSERT_DOUBLE_EQ(a100.layer_dispatch_us, 5);
  ASSERT_DOUBLE_EQ(a100.link_gbps, 600.0 / 2 * 8);
  ASSERT_DOUBLE_EQ(a100.link_latency_us, 6);
  const double allreduce = 1.0 * 4096 * 8 / 2400e9 * 1e3 + 2 * 6e-3;
  const double f1 = 0.005, f2 = 0.010;  // one and two dispatches, ms
  const LayerProfile& attn = split.layers[1];
  EXPECT_NEAR(attn.fwd_ms, (3.0 - f1) / 2 + f1 + allreduce, 1e-12);
  EXPECT_NEAR(attn.bwd_ms, (6.0 - f2) / 2 + f2 + allreduce, 1e-12);
  EXPECT_NEAR(attn.tensor_fwd_ms, allreduce, 1e-12);
  EXPECT_NEAR(attn.tensor_bwd_ms, allreduce, 1e-12);
  EXPECT_EQ(attn.tensor_fwd_bytes, 4096u);
  // W keeps its share of the shard's backward (2 of 6 ms measured) and
  // waits for no all-reduce.
  EXPECT_NEAR(attn.bwd_weight_ms, ((6.0 - f2) / 2 + f2) / 3, 1e-12);
  const LayerProfile& ffn = split.layers[2];
  EXPECT_NEAR(ffn.fwd_ms, (4.0 - f1) / 2 + f1 + allreduce, 1e-12);
  EXPECT_NEAR(ffn.bwd_ms, (8.0 - f2) / 2 + f2 + allreduce, 1e-12);
  // The embedding and the head stay whole, without all-reduces; memory is
  // as measured everywhere.
  for (int l : {0, 3}) {
    EXPECT_DOUBLE_EQ(split.layers[l].fwd_ms, whole.layers[l].fwd_ms);
    EXPECT_DOUBLE_EQ(split.layers[l].bwd_ms, whole.layers[l].bwd_ms);
    EXPECT_DOUBLE_EQ(split.layers[l].tensor_fwd_ms + split.layers[l].tensor_bwd_ms, 0.0);
  }
  for (int l = 0; l < 4; ++l) {
    EXPECT_EQ(split.layers[l].activation_bytes, whole.layers[l].activation_bytes);
    EXPECT_EQ(split.layers[l].param_bytes, whole.layers[l].param_bytes);
  }
  // t = 1 is the profile as measured.
  EXPECT_DOUBLE_EQ(whole.layers[1].fwd_ms, 3.0);
  EXPECT_DOUBLE_EQ(whole.layers[2].bwd_ms, 8.0);

  // The note says what is measured and what modelled; the old one is gone.
  std::string notes;
  for (const auto& a : split.assumptions) notes += a + "\n";
  EXPECT_NE(notes.find("parallel.tensor = 2 with a measured profile"), std::string::npos) << notes;
  EXPECT_NE(notes.find("modelled are the 2 attention / FFN blocks' split"), std::string::npos) << notes;
  EXPECT_NE(notes.find("the other 2 layers"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("is not priced"), std::string::npos) << notes;
  for (const auto& a : whole.assumptions) EXPECT_EQ(a.find("parallel.tensor"), std::string::npos) << a;
}

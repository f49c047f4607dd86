#pragma once
// Shared by the profile tests: where PipeDream's published profiles are
// (resources/profiles/pipedream, shipped with the project) and profile equality.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/layer_profile.h"

namespace pw::test {

inline const std::vector<std::string>& pipedream_models() {
  static const std::vector<std::string> m = {"alexnet",     "vgg16",        "resnet18", "resnet50",  "resnet101",
                                             "densenet121", "inception_v3", "gnmt",     "gnmt_large"};
  return m;
}

inline std::string pipedream_graph_path(const std::string& model) {
  return std::string(PW_SOURCE_DIR) + "/resources/profiles/pipedream/" + model + "/graph.txt";
}

inline void expect_same_layers(const ModelProfile& a, const ModelProfile& b, bool all_fields) {
  ASSERT_EQ(a.size(), b.size());
  for (int i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("layer " + std::to_string(i) + " " + a.layers[i].name);
    const auto &x = a.layers[i], &y = b.layers[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.fwd_ms, y.fwd_ms);
    EXPECT_EQ(x.bwd_ms, y.bwd_ms);
    EXPECT_EQ(x.output_bytes, y.output_bytes);
    EXPECT_EQ(x.param_bytes, y.param_bytes);
    if (all_fields) {
      EXPECT_EQ(x.activation_bytes, y.activation_bytes);
      EXPECT_EQ(x.input_bytes, y.input_bytes);
      EXPECT_EQ(x.optimizer_bytes, y.optimizer_bytes);
      EXPECT_EQ(x.optimizer_ms, y.optimizer_ms);
    }
  }
  EXPECT_EQ(a.microbatch_size, b.microbatch_size);
  EXPECT_EQ(a.device, b.device);
}

}  // namespace pw::test

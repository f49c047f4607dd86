// A resume must continue the checkpoint's model, stages and optimizer;
// anything else it may change (engine/core/job/resume_check.h, issue 22).
#include <gtest/gtest.h>

#include "core/job/resume_check.h"
#include "core/spec/model_fields.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

JobSpec job(const std::vector<std::string>& overrides = {}) {
  return job_from_text(R"({"name": "r", "model": {"kind": "cnn", "channels": [8, 16], "classes": 10},
    "training": {"batch_size": 8, "microbatch_size": 2, "iterations": 10},
    "cluster": {"devices": 2, "device": "custom", "memory_gb": 1, "tflops": 0.05},
    "pipeline": {"stages": 2, "schedule": "1f1b"}})",
                       ".", overrides);
}

// The refusal's path and its whole message, or "" when the resume may proceed.
std::string refusal(const std::vector<std::string>& overrides) {
  try {
    check_resume_compatible(job(), job(overrides));
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(ResumeCheck, TheIssuesExampleNamesTheFieldAndTheCheckpointsValue) {
  EXPECT_EQ(refusal({"model.channels=[16,32]"}),
            "model.channels: differs from the checkpoint's [8,16] (now [16,32]); a resume cannot change the model");
}

TEST(ResumeCheck, EveryFieldThatShapesTheSavedStateIsRefused) {
  EXPECT_NE(refusal({"model.channels=[8,16,16]"}).find("model.channels: "), std::string::npos);  // layer count
  EXPECT_NE(refusal({"model.classes=11"}).find("model.classes: differs from the checkpoint's 10"), std::string::npos);
  EXPECT_NE(refusal({"model.image_size=32"}).find("model.image_size: "), std::string::npos);
  EXPECT_NE(refusal({"model.in_channels=3"}).find("model.in_channels: "), std::string::npos);
  JobSpec mlp = job();
  mlp.model.kind = "mlp";  // the same widths read as an MLP's
  EXPECT_THROW(
      {
        try {
          check_resume_compatible(job(), mlp);
        } catch (const SpecError& e) {
          EXPECT_EQ(e.path(), "model.kind");
          throw;
        }
      },
      SpecError);
  EXPECT_NE(refusal({"pipeline.stages=1", "cluster.devices=1"}).find("pipeline.stages: differs from the checkpoint's 2"),
            std::string::npos);
  EXPECT_NE(refusal({"training.optimizer=sgd"}).find("training.optimizer: differs from the checkpoint's \"adam\""),
            std::string::npos);
}

TEST(ResumeCheck, WhatOnlySteersTrainingMayChange) {
  EXPECT_EQ(refusal({"training.iterations=50"}), "");
  EXPECT_EQ(refusal({"training.lr=0.5"}), "");
  EXPECT_EQ(refusal({"training.microbatch_size=1"}), "");  // 8 microbatches instead of 4
  EXPECT_EQ(refusal({"pipeline.schedule=gpipe"}), "");
  EXPECT_EQ(refusal({"name=\"other\""}), "");
}

// A supernet job also keeps its search space (but its window and search
// settings) and its seed: they make the candidates, the subnet sequence and
// the partition a checkpoint was taken in (issue 31).
JobSpec supernet(const std::vector<std::string>& overrides = {}) {
  return job_from_text(R"({"name": "s", "model": {"kind": "cnn", "image_size": 28, "in_channels": 1, "channels": [16],
    "classes": 10}, "search_space": {"builtin": "fmnist-cnn", "choice_layers": 4, "kernels": [3, 5, 7],
    "widths": [16, 32], "window": 8}, "training": {"batch_size": 32, "microbatch_size": 32, "iterations": 20, "seed": 1},
    "cluster": {"devices": 2, "device": "custom", "memory_gb": 1, "tflops": 0.05},
    "pipeline": {"stages": 2, "schedule": "csp"}})",
                       ".", overrides);
}

std::string supernet_refusal(const std::vector<std::string>& overrides) {
  try {
    check_resume_compatible(supernet(), supernet(overrides));
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(ResumeCheck, ASupernetKeepsItsSearchSpaceAndSeed) {
  EXPECT_EQ(supernet_refusal({"search_space.kernels=[3,5]"}),
            "search_space.kernels: differs from the checkpoint's [3,5,7] (now [3,5]); a resume cannot change the supernet");
  EXPECT_EQ(supernet_refusal({"search_space.device_budget_gb=0.5"}),
            "search_space.device_budget_gb: differs from the checkpoint's null (now 0.5); a resume cannot change the "
            "supernet");
  EXPECT_EQ(supernet_refusal({"training.seed=2"}),
            "training.seed: differs from the checkpoint's 1 (now 2); a resume cannot change the supernet's initial "
            "weights and subnets");
  EXPECT_EQ(supernet_refusal({"search_space.window=1"}), "");  // CSP's result does not depend on it
  EXPECT_EQ(supernet_refusal({"search_space.search.evaluations=8"}), "");
  EXPECT_EQ(supernet_refusal({"training.iterations=40"}), "");
  try {
    check_resume_compatible(job(), supernet());
    ADD_FAILURE() << "a supernet resuming a pipeline checkpoint must be refused";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "model.channels");  // the model differs first here
  }
}

// The model's fields come from one table (spec/model_fields.h): every row
// that shapes the weights, changed alone under a kind that writes it, is
// refused naming the row; every other row may change. A row added to the
// table is compared with no second list to update.
TEST(ResumeCheck, EachModelFieldOfTheTableIsComparedOrAllowedAsItsRowSays) {
  ASSERT_GT(model_fields().size(), 20u);
  for (const auto& row : model_fields()) {
    SCOPED_TRACE(std::string(row.path));
    JobSpec saved = job(), resumed = job();
    const std::string kind = row.kinds.empty() ? saved.model.kind : std::string(row.kinds.front());
    saved.model.kind = resumed.model.kind = kind;
    std::visit(
        [&](auto member) {
          auto& v = resumed.model.*member;
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) v += "x";
          else if constexpr (std::is_arithmetic_v<T>) v += 1;
          else v.push_back(3);
        },
        row.member);
    ASSERT_NE(row.value(saved.model), row.value(resumed.model));
    if (!row.shapes_weights) {
      EXPECT_NO_THROW(check_resume_compatible(saved, resumed));
      continue;
    }
    try {
      check_resume_compatible(saved, resumed);
      ADD_FAILURE() << "a changed " << row.path << " was resumed";
    } catch (const SpecError& e) {
      EXPECT_EQ(e.path(), row.path);
      EXPECT_NE(std::string(e.what()).find("a resume cannot change the model"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(model_field("model.nonesuch"), std::logic_error);  // a parser reading it would fail alike
}

}  // namespace
}  // namespace pw

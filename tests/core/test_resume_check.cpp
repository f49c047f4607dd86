// A resume must continue the checkpoint's model, stages and optimizer;
// anything else it may change (engine/core/spec/resume_check.h, issue 22).
#include <gtest/gtest.h>

#include "core/spec/resume_check.h"
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

}  // namespace
}  // namespace pw

#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/schedule/schedule_kind.h"
#include "core/spec/device.h"

namespace pw {

// The model as the job describes it. Sizes a kind does not use stay 0.
struct ModelSpec {
  std::string kind;  // transformer | bert | gpt | mlp | cnn | uniform | profile | torchscript
  // Transformer family (bert/gpt: `layers`; transformer: encoder + decoder).
  int layers = 0;
  int encoder_layers = 0;
  int decoder_layers = 0;
  int hidden = 0;
  int heads = 0;
  int seq_len = 0;
  int vocab = 0;
  int ffn_mult = 4;
  std::string precision = "fp16";  // fp16 (mixed) | fp32
  // mlp: input features, hidden widths, classes. cnn: channels per conv layer.
  int input = 0;
  std::vector<int> widths;
  int classes = 0;
  int image_size = 0;
  int in_channels = 0;
  // uniform: N identical layers given directly in cost-model units.
  double fwd_ms = 0, bwd_ms = 0, activation_mb = 0, param_mb = 0, output_mb = 0, optimizer_ms = 0;
  // A measured profile file (Pipewright JSON or PipeDream graph.txt); when
  // set it replaces the analytic costs.
  std::string profile;
  // Device preset the profile was measured on, when the file does not say
  // (PipeDream's graph.txt): costs are re-targeted to cluster.device.
  std::string profile_device;
  // torchscript: a scripted nn.Sequential (docs/torchscript.md). `path` is
  // absolute after load_job; input_shape excludes the batch dimension;
  // `classes` (above) is the width of the model's output.
  std::string path;
  std::vector<long long> input_shape;
  std::string input_dtype = "float32";  // float32 | int64
  nlohmann::json raw;  // the object as written, for the engine's model builder
};

struct TrainingSpec {
  std::string optimizer = "adam";  // sgd | momentum | adam
  double lr = 1e-3;
  std::string lr_schedule = "constant";  // constant | cosine (see learning_rate.h)
  int warmup = 0;                        // iterations of linear warmup
  // Both act on the whole pipeline's gradient at the optimizer step (the
  // stages agree on it there, see docs/engine.md): the global L2 norm
  // clipped to this (0 = off), and a step whose gradients hold a NaN or an
  // infinity skipped on every stage.
  double clip_grad_norm = 0;
  bool skip_nonfinite = false;
  int batch_size = 0;
  int microbatch_size = 0;
  int iterations = 1;
  std::uint64_t seed = 0;
};

struct ClusterSpec {
  int devices = 1;
  DeviceSpec device;
};

struct PipelineSpec {
  int stages = 1;
  int microbatches = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  std::string planner = "uniform";
  int chunks = 1;  // interleaved 1F1B: model chunks per device
};

struct JobSpec {
  std::string name;
  ModelSpec model;
  nlohmann::json search_space;  // interpreted by the NAS layer
  nlohmann::json data;          // interpreted by the engine's data loaders
  TrainingSpec training;
  ClusterSpec cluster;
  PipelineSpec pipeline;
  nlohmann::json raw;  // the whole document after overrides
};

// Validates and converts. Throws SpecError naming the field's JSON path.
JobSpec parse_job(const nlohmann::json& doc);

// Applies "a.b.c=value" to a document. The value is parsed as JSON when it
// is valid JSON (numbers, true, objects) and taken as a string otherwise.
void apply_override(nlohmann::json& doc, const std::string& assignment);

// Reads a file, applies overrides in order, validates. Throws SpecError
// (path "$" for unreadable or non-JSON files).
JobSpec load_job(const std::string& file, const std::vector<std::string>& overrides = {});

}  // namespace pw

#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/schedule/memory_cap.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/data_spec.h"
#include "core/spec/device.h"
#include "core/spec/override.h"  // apply_override: the overrides job_from_text applies
#include "core/spec/runtime_spec.h"

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
  // fp32 | fp16 (mixed: fp16 weights and activations, fp32 master copy).
  // The default is what `run` trains in; fp16 is for planning and
  // simulating GPU jobs, and `run` refuses it (docs/jobs.md).
  std::string precision = "fp32";
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
  std::vector<std::int64_t> input_shape;
  std::string input_dtype = "float32";  // float32 | int64
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
  // training.microbatch_size "auto": the planner searches the size
  // (microbatch_search.h) and resolve_auto_microbatch sets the one chosen.
  bool microbatch_size_auto = false;
  int iterations = 1;
  std::uint64_t seed = 0;
};

struct ClusterSpec {
  int devices = 1;
  DeviceSpec device;
  // Where the devices sit: cluster.gpus_per_node and the link between nodes
  // (node_link_gbps, node_link_latency_us), with the preset's defaults
  // (core/cluster/topology.h states them and the placement rule).
  int gpus_per_node = 1;
  double node_link_gbps = 0;
  double node_link_latency_us = 0;
  // The transport between stages when the engine runs the job: gloo | nccl
  // | auto (core/cluster/transport_choice.h decides, each worker logs why).
  std::string backend = "auto";
};

struct PipelineSpec {
  int stages = 1;
  // "auto": the planner chooses the stage count with the replicas
  // (core/plan/parallel_search.h); `stages` is 1 until a plan names it.
  bool stages_auto = false;
  int microbatches = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  // "auto": the planner chooses the schedule family too (PlanRequest::
  // auto_schedule); `schedule` stays 1f1b until a plan names the winner.
  bool schedule_auto = false;
  std::string planner = "uniform";
  int chunks = 1;  // interleaved 1F1B: model chunks per device
  // pipeline.memory_cap: the activations a device may keep in flight, a
  // fraction of 1F1B's ("1/3", 0.5) or bytes ("12GiB"); unset = the budget
  // alone. Meaning: core/schedule/memory_cap.h.
  MemoryCap memory_cap;
};

// Replicas of the pipeline (data parallelism): each trains on its share of
// training.batch_size and the replicas of each stage all-reduce their
// gradients in buckets before the optimizer step (docs/jobs.md, "parallel").
struct ParallelSpec {
  int data = 1;
  // "auto": the planner chooses it with the stage count; `data` is 1 until
  // a plan names it.
  bool data_auto = false;
  // Gradients are all-reduced in buckets of about this size (PyTorch DDP's
  // default bucket_cap_mb), each started when its layers' gradients exist.
  double bucket_mb = 25;
  // Tensor parallelism (Megatron-LM): each layer of a stage split over
  // `tensor` devices of one node, attention by heads and the FFN by its
  // width (column- then row-parallel), with two all-reduces of activations
  // per transformer layer forward and two of their gradients backward.
  // "auto": the planner chooses it with the stages and replicas; 1 until a
  // plan names it. Placement: core/cluster/topology.h.
  int tensor = 1;
  bool tensor_auto = false;
  // Megatron's sequence parallelism (Korthikanti et al. 2022): the layer
  // norms and dropouts outside the tensor-parallel regions split along the
  // sequence, so their activations are divided by `tensor` too; the
  // all-reduces become reduce-scatter + all-gather of the same volume.
  bool sequence = false;
};

struct JobSpec {
  std::string name;
  ModelSpec model;
  nlohmann::json search_space;  // interpreted by the NAS layer (core/nas/search_space)
  DataSpec data;                // what the engine's data loaders read
  RuntimeSpec runtime;          // the engine's live migration settings
  TrainingSpec training;
  ClusterSpec cluster;
  PipelineSpec pipeline;
  ParallelSpec parallel;
  nlohmann::json raw;  // the whole document after overrides

  // pipeline.stages, parallel.data or parallel.tensor "auto": the planner
  // searches the (tensor, stages, replicas) split of cluster.devices.
  bool parallel_searched() const { return pipeline.stages_auto || parallel.data_auto || parallel.tensor_auto; }
  // Devices one replica's stage occupies: its tensor-parallel group.
  int tensor() const { return parallel.tensor; }
  // Samples one replica trains on per iteration: batch_size / replicas.
  int replica_batch() const { return training.batch_size / parallel.data; }
};

// Validates and converts. Throws SpecError naming the field's JSON path;
// every number is range-checked against core/spec/spec_bounds.h.
JobSpec parse_job(const nlohmann::json& doc);

// What pipeline.schedule accepts: every static schedule kind, csp, and
// "auto" (the planner chooses the schedule with the plan). The parser and
// the studio's designer offer exactly these.
std::vector<std::string> pipeline_schedule_choices();

// Parses job text, applies overrides in order, validates. Relative paths in
// the job (profile, TorchScript model, data file) are taken relative to
// `base_dir`. Throws SpecError (path "$" for text that is not JSON).
JobSpec job_from_text(const std::string& text, const std::string& base_dir,
                      const std::vector<std::string>& overrides = {});

// Reads a file (a regular file of at most kMaxJobFileBytes), then as
// job_from_text relative to the file's directory. Throws SpecError.
JobSpec load_job(const std::string& file, const std::vector<std::string>& overrides = {});

}  // namespace pw

#include "core/spec/job_fields.h"

#include <stdexcept>

#include "core/spec/spec_bounds.h"

namespace pw {

const std::vector<FieldRange>& job_field_ranges() {
  using namespace bounds;
  static const std::vector<FieldRange> rows = {
      {"model.layers", 1, kLayers},
      {"model.encoder_layers", 0, kLayers},
      {"model.decoder_layers", 0, kLayers},
      {"model.hidden", 1, kHidden},
      {"model.seq_len", 1, kSeqLen},
      {"model.vocab", 1, kVocab},
      {"model.ffn_mult", 1, kFfnMult},
      {"model.input", 1, kHidden},
      {"model.classes", 1, kVocab},
      {"model.image_size", 4, kImageSize},
      {"model.in_channels", 1, kInChannels},
      {"model.fwd_ms", 0, kLayerMs, false},
      {"model.bwd_ms", 0, kLayerMs, false},
      {"model.activation_mb", 0, kLayerMb, false},
      {"model.param_mb", 0, kLayerMb, false},
      {"model.output_mb", 0, kLayerMb, false},
      {"model.optimizer_ms", 0, kLayerMs, false},
      {"training.lr", 0, kLearningRate, false},
      {"training.microbatch_size", 1, kMicrobatchSize},
      {"training.batch_size", 1, kBatchSize},
      {"training.iterations", 1, kIterations},
      {"training.warmup", 0, kIterations},
      {"training.clip_grad_norm", 0, kGradNorm, false},
      {"cluster.devices", 1, kDevices},
      {"cluster.memory_gb", 0.001, kMemoryGb, false},
      {"cluster.gpus_per_node", 1, kDevices},
      {"cluster.node_link_gbps", 1e-6, kRate, false},
      {"cluster.node_link_latency_us", 0, kMicroseconds, false},
      {"pipeline.stages", 1, kDevices},
      {"pipeline.microbatches", 1, kMicrobatches},
      {"pipeline.chunks", 1, kChunks},
      {"parallel.data", 1, kDevices},
      {"parallel.bucket_mb", 0.001, kLayerMb, false},
      {"parallel.tensor", 1, kDevices},
  };
  return rows;
}

const FieldRange& job_field_range(std::string_view path) {
  for (const auto& r : job_field_ranges())
    if (r.path == path) return r;
  throw std::out_of_range("no field range for \"" + std::string(path) + "\"");
}

const std::vector<std::string>& model_kind_names() {
  static const std::vector<std::string> kinds = {"transformer", "bert", "gpt", "mlp", "cnn", "uniform", "profile", "torchscript"};
  return kinds;
}

std::vector<std::string> planner_names() { return {"uniform", "vpipe", "gpipe", "pipedream", "exact"}; }

}  // namespace pw

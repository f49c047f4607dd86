#pragma once
#include <cstdint>

// Upper bounds of a job's numeric fields (docs/jobs.md, "Bounds"). They are
// far above any real job and low enough that the cost model's products
// (bytes = microbatch x seq_len x hidden x ...) stay inside double and
// uint64 and that nothing allocates per layer or per microbatch beyond
// memory. One place, so the docs table and the parser cannot drift.
namespace pw::bounds {
constexpr int kLayers = 10000;          // model.layers, encoder_layers + decoder_layers, widths/channels entries
constexpr int kHidden = 1 << 17;        // model.hidden, widths, channels, input (131072)
constexpr int kSeqLen = 1 << 17;        // model.seq_len
constexpr int kVocab = 1 << 24;         // model.vocab, model.classes
constexpr int kFfnMult = 64;            // model.ffn_mult
constexpr int kImageSize = 8192;        // model.image_size
constexpr int kInChannels = 4096;       // model.in_channels
constexpr int kShapeDims = 8;           // model.input.shape entries
constexpr std::int64_t kShapeExtent = 1 << 24;  // each model.input.shape entry
constexpr int kMicrobatchSize = 1 << 16;  // training.microbatch_size
constexpr int kBatchSize = 1 << 26;       // training.batch_size
constexpr int kMicrobatches = 1 << 16;    // pipeline.microbatches
constexpr int kIterations = 1000000000;   // training.iterations, warmup
constexpr int kDevices = 4096;            // cluster.devices (and so pipeline.stages)
constexpr int kChunks = 64;               // pipeline.chunks
constexpr double kLayerMs = 1e9;          // uniform fwd_ms, bwd_ms, optimizer_ms (11.6 days)
constexpr double kLayerMb = 1e9;          // uniform activation_mb, param_mb, output_mb (1 PB)
constexpr double kMemoryGb = 1e6;         // cluster.memory_gb
constexpr double kRate = 1e9;             // tflops, link and bandwidth figures
constexpr double kMicroseconds = 1e9;     // latencies and per-message times
// training.lr: far past any useful rate, so a run can be driven to
// non-finite weights on purpose (training.skip_nonfinite is tested that way).
constexpr double kLearningRate = 1e20;
constexpr double kGradNorm = 1e12;        // training.clip_grad_norm (0: no clipping)
constexpr std::int64_t kSamples = std::int64_t{1} << 40;  // data.samples, train_samples, test_samples
}  // namespace pw::bounds

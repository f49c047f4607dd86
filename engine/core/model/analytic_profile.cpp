#include "core/model/analytic_profile.h"

#include "core/model/tensor_parallel.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace pw {
namespace {

struct Units {
  double tflops;      // effective FLOP/s * 1e-12
  double mem_gbs;     // device memory bandwidth
  double act_scale;   // 1 for fp16 activations, 2 for fp32
  double weight_b;    // bytes per parameter on device (weights)
  double optim_b;     // optimizer-state bytes per parameter
  double microbatch;  // samples per microbatch (the fixed part is per microbatch)
  double penalty;     // DeviceSpec::small_batch_penalty
  double dispatch_ms; // per layer phase (DeviceSpec::layer_dispatch_us)
  double tensor_ms;   // optimizer step, per parameter tensor
};

Units units_for(const JobSpec& job) {
  const DeviceSpec& d = job.cluster.device;
  Units u{d.tflops, d.mem_bandwidth_gbs, 1, 2, 12, static_cast<double>(std::max(1, job.training.microbatch_size)),
          d.small_batch_penalty, d.layer_dispatch_us * 1e-3, d.optimizer_tensor_us * 1e-3};
  bool fp32 = job.model.precision == "fp32";
  u.act_scale = fp32 ? 2 : 1;
  u.weight_b = fp32 ? 4 : 2;
  const std::string& opt = job.training.optimizer;
  // Mixed precision keeps an fp32 master copy (4 bytes) besides the moments.
  double master = fp32 ? 0 : 4;
  u.optim_b = master + (opt == "adam" ? 8 : opt == "momentum" ? 4 : 0);
  return u;
}

double compute_ms(double flops, const Units& u) { return flops / (u.tflops * 1e12) * 1e3; }

// A phase that takes `ms` at full efficiency for the whole microbatch, as
// the device runs it: plus its fixed part (DeviceSpec: small_batch_penalty
// x one sample's time + `kernels` dispatches). Returns {time, fixed part}.
std::pair<double, double> with_fixed(double ms, double kernels, const Units& u) {
  if (ms <= 0) return {0, 0};
  double fixed = u.penalty * ms / u.microbatch + kernels * u.dispatch_ms;
  return {ms + fixed, fixed};
}

// Optimizer step streams weights, gradients and state through memory
// (read + write).
double optimizer_ms(double params, int tensors, const Units& u) {
  double bytes = params * (2 * u.weight_b + 2 * u.optim_b + u.weight_b);
  return bytes / (u.mem_gbs * 1e9) * 1e3 + tensors * u.tensor_ms;
}

// w_flops: the weight-gradient share of bwd_flops (W of a split backward);
// < 0 leaves it to weight_grad_ms's rule.
LayerProfile make_layer(std::string name, std::string type, double fwd_flops, double bwd_flops,
                        double act_bytes, double in_bytes, double out_bytes, double params, const Units& u,
                        double w_flops = -1, int tensors = -1) {
  LayerProfile l;
  l.name = std::move(name);
  l.type = std::move(type);
  std::tie(l.fwd_ms, l.fwd_fixed_ms) = with_fixed(compute_ms(fwd_flops, u), 1, u);
  std::tie(l.bwd_ms, l.bwd_fixed_ms) = with_fixed(compute_ms(bwd_flops, u), 2, u);
  // W is its own kernels: its share of the penalty and one dispatch.
  if (w_flops >= 0) l.bwd_weight_ms = std::min(l.bwd_ms, with_fixed(compute_ms(std::min(w_flops, bwd_flops), u), 1, u).first);
  l.param_tensors = tensors >= 0 ? tensors : params > 0 ? 2 : 0;  // default: a weight and a bias
  l.activation_bytes = static_cast<std::uint64_t>(act_bytes);
  l.input_bytes = static_cast<std::uint64_t>(in_bytes);
  l.output_bytes = static_cast<std::uint64_t>(out_bytes);
  l.param_bytes = static_cast<std::uint64_t>(params * u.weight_b);
  l.optimizer_bytes = static_cast<std::uint64_t>(params * u.optim_b);
  l.optimizer_ms = optimizer_ms(params, l.param_tensors, u);
  return l;
}

// Tensor parallelism (parallel.tensor = t, core/model/tensor_parallel.h):
// each block's matrix products are split over t devices (Megatron's
// column- then row-parallel layers, attention by heads, the embedding and
// head by vocabulary), so its FLOPs, parameters and the activations inside
// the split regions are divided by t. The device's microbatch rule
// (with_fixed) applies to the shard as to a layer of its own: the penalty
// is that of one sample of the shard, and every kernel is still launched
// (docs/planners.md, "Tensor parallelism"). What lies outside the split
// regions (layer norms, the dropouts after attention and FFN, the inputs of
// the QKV projection and the first FFN layer: 10 s b h per layer) is
// replicated, unless sequence parallelism splits it along the sequence.
// A pipeline cut sends 1/t of the boundary activation per rank (Megatron
// SC'21 4.1, scatter/gather across the cut; the all-gather inside the node
// after it is left out).
// The tensor group's all-reduces (tensor_collectives_of per block type),
// each of one [s, b, h] tensor over the intra-node link (the job keeps a
// group inside a node), added to the time of the phase they block: the
// forward, and the backward's B (they carry input gradients; W waits for
// none). Their latency is part of the phase's fixed part.
void add_tensor_collectives(const JobSpec& job, double hidden_bytes, LayerProfile& l) {
  const int t = job.parallel.tensor;
  const LinkSpeed link{job.cluster.device.link_gbps, job.cluster.device.link_latency_us, false};
  const auto bytes = static_cast<std::uint64_t>(hidden_bytes);
  const double one = tensor_allreduce_ms(bytes, t, link);
  const double latency = 2.0 * (t - 1) * link.latency_us * 1e-3;  // the ring's 2 (t - 1) steps
  const TensorCollectives c = tensor_collectives_of(l.type);
  l.tensor_fwd_ms = c.forward * one;
  l.tensor_bwd_ms = c.backward * one;
  l.tensor_fwd_bytes = c.forward * bytes;
  l.tensor_bwd_bytes = c.backward * bytes;
  l.fwd_ms += l.tensor_fwd_ms;
  l.fwd_fixed_ms += c.forward * latency;
  if (l.bwd_weight_ms < 0) l.bwd_weight_ms = weight_grad_ms(l);  // W keeps its compute alone
  l.bwd_ms += l.tensor_bwd_ms;
  l.bwd_fixed_ms += c.backward * latency;
}

// One [s, b, h] activation of the job's transformer, the tensor a block's
// all-reduce carries.
double hidden_bytes_of(const JobSpec& job) {
  return 2.0 * job.training.microbatch_size * job.model.seq_len * job.model.hidden * units_for(job).act_scale;
}

// A phase measured whole (`whole` ms, `kernels` dispatches) as a shard of
// 1/t of its work runs it: with_fixed's time at full efficiency recovered
// from the measurement, divided by t, and the rule applied again (so the
// part above the dispatches is divided by t). Returns {time, fixed part}.
std::pair<double, double> shard_of_measured(double whole, double kernels, double t, const Units& u) {
  const double dispatch = kernels * u.dispatch_ms;
  if (whole <= dispatch) return {whole, whole};
  return with_fixed((whole - dispatch) / (1 + u.penalty / u.microbatch) / t, kernels, u);
}

void transformer_layers(const JobSpec& job, ModelProfile& out) {
  const auto& m = job.model;
  Units u = units_for(job);
  const double t = std::max(1, job.parallel.tensor);
  const bool sp = job.parallel.sequence;
  auto outside = [&](double bytes) { return sp ? bytes / t : bytes; };  // outside the tensor-parallel regions
  double b = job.training.microbatch_size, s = m.seq_len, h = m.hidden, a = m.heads, f = m.ffn_mult;
  double tokens = b * s;
  double sbh = tokens * h * u.act_scale;  // bytes of one [s,b,h] fp16 tensor / 2
  double hidden_bytes = 2 * sbh;          // one [s,b,h] tensor
  // Embedding: a gather; costs are memory-bound, activation = dropout mask.
  // The token table splits by vocabulary over the tensor ranks; the position
  // table stays whole on every rank (Megatron's VocabParallelEmbedding, the engine's).
  double emb_params = m.vocab * h / t + s * h;
  out.layers.push_back(make_layer("embedding", "embedding", 0, 0, outside(sbh), tokens * 8, hidden_bytes / t,
                                  emb_params, u, -1, 2));
  const double gather_ms = (tokens * h * 2 * u.weight_b) / (u.mem_gbs * 1e9) * 1e3;
  std::tie(out.layers.back().fwd_ms, out.layers.back().fwd_fixed_ms) = with_fixed(gather_ms, 1, u);
  std::tie(out.layers.back().bwd_ms, out.layers.back().bwd_fixed_ms) = with_fixed(2 * gather_ms, 2, u);
  // Its input is token ids: the whole backward is the table's gradient (W).
  out.layers.back().bwd_weight_ms = out.layers.back().bwd_ms;

  // Attention block incl. its layer norm: 11 s b h + 5 a s^2 b (+2 sbh LN).
  // Outside the split: LN input 2, QKV input 2, output dropout mask 1 (x sbh);
  // split: Q and K 4, V 2, output projection input 2, and the core 5 a s^2 b.
  auto attention = [&](const std::string& name, bool cross) {
    double flops = tokens * (8 * h * h + 4 * s * h) / t;
    double core = 5 * a * s * s * b * u.act_scale / t;
    double act = outside(5 * sbh) + 8 * sbh / t + core;
    if (cross) act += outside(2 * sbh);  // encoder output is kept too
    double params = (4 * h * h + 4 * h) / t + 2 * h;
    // W: the four projections' weight gradients, one forward's worth of
    // their FLOPs; the score/context matmuls have no weights (all B).
    out.layers.push_back(make_layer(name, cross ? "cross_attention" : "attention", flops, 2 * flops, act,
                                    outside(hidden_bytes), hidden_bytes / t, params, u, tokens * 8 * h * h / t, 10));
    // Selective recomputation drops the core and recomputes QK^T, softmax
    // and the attention over V: 4 s h FLOPs per token.
    out.layers.back().core_activation_bytes = static_cast<std::uint64_t>(core);
    out.layers.back().core_fwd_ms = with_fixed(compute_ms(tokens * 4 * s * h / t, u), 1, u).first;
  };
  // FFN block: 2 sbh in + 8 sbh up + 8 sbh activation + sbh dropout mask,
  // scaled by the width multiple (4 in the formula), + 2 sbh LN. Outside
  // the split: LN 2, first layer's input 2, dropout mask 1; split: 4 f.
  auto ffn = [&](const std::string& name) {
    double flops = tokens * 4 * f * h * h / t;
    double act = outside(5 * sbh) + 4 * f * sbh / t;
    double params = (2 * f * h * h + f * h) / t + h + 2 * h;
    out.layers.push_back(make_layer(name, "ffn", flops, 2 * flops, act, outside(hidden_bytes), hidden_bytes / t,
                                    params, u, flops, 6));
  };
  int enc = m.kind == "transformer" ? m.encoder_layers : m.layers;
  int dec = m.kind == "transformer" ? m.decoder_layers : 0;
  for (int i = 0; i < enc; ++i) {
    attention("enc" + std::to_string(i) + ".attn", false);
    ffn("enc" + std::to_string(i) + ".ffn");
  }
  for (int i = 0; i < dec; ++i) {
    attention("dec" + std::to_string(i) + ".attn", false);
    attention("dec" + std::to_string(i) + ".cross", true);
    ffn("dec" + std::to_string(i) + ".ffn");
  }
  // Output head: projection to the vocabulary; logits kept in fp32 for the loss.
  double head_flops = tokens * 2 * h * m.vocab / t;
  double logits = tokens * m.vocab * 4 / t;
  bool tied = m.kind == "gpt";  // GPT ties the head to the embedding
  out.layers.push_back(make_layer("head", "head", head_flops, 2 * head_flops, logits + outside(hidden_bytes),
                                  outside(hidden_bytes), 0, tied ? 0 : h * m.vocab / t, u, head_flops, tied ? 0 : 1));
  if (t > 1)
    for (LayerProfile& l : out.layers) add_tensor_collectives(job, hidden_bytes, l);
}

void mlp_layers(const JobSpec& job, ModelProfile& out) {
  const auto& m = job.model;
  Units u = units_for(job);
  double b = job.training.microbatch_size;
  std::vector<int> dims{m.input};
  dims.insert(dims.end(), m.widths.begin(), m.widths.end());
  dims.push_back(m.classes);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    double in = dims[i], o = dims[i + 1];
    double flops = 2 * b * in * o;
    out.layers.push_back(make_layer("fc" + std::to_string(i), "linear", flops, 2 * flops, b * (in + o) * 4,
                                    b * in * 4, b * o * 4, in * o + o, u, flops));
  }
}

void cnn_layers(const JobSpec& job, ModelProfile& out) {
  const auto& m = job.model;
  Units u = units_for(job);
  double b = job.training.microbatch_size;
  double hw = m.image_size, c = m.in_channels;
  for (size_t i = 0; i < m.widths.size(); ++i) {
    double o = m.widths[i];
    double flops = 2 * b * 9 * c * o * hw * hw;
    double in_bytes = b * c * hw * hw * 4;
    double conv_out = b * o * hw * hw * 4;
    double pooled = hw >= 4 ? hw / 2 : hw;
    double out_bytes = b * o * pooled * pooled * 4;
    out.layers.push_back(make_layer("conv" + std::to_string(i), "conv3x3+relu+pool", flops, 2 * flops,
                                    in_bytes + 2 * conv_out, in_bytes, out_bytes, 9 * c * o + o, u, flops));
    c = o;
    hw = pooled;
  }
  double feat = c * hw * hw;
  double flops = 2 * b * feat * m.classes;
  out.layers.push_back(make_layer("fc", "linear", flops, 2 * flops, b * feat * 4, b * feat * 4, b * m.classes * 4,
                                  feat * m.classes + m.classes, u, flops));
}

void uniform_layers(const JobSpec& job, ModelProfile& out) {
  const auto& m = job.model;
  constexpr double MB = 1024.0 * 1024;
  for (int i = 0; i < m.layers; ++i) {
    LayerProfile l;
    l.name = "layer" + std::to_string(i);
    l.type = "uniform";
    l.fwd_ms = m.fwd_ms;
    l.bwd_ms = m.bwd_ms;
    l.activation_bytes = static_cast<std::uint64_t>(m.activation_mb * MB);
    l.input_bytes = static_cast<std::uint64_t>(m.output_mb * MB);
    l.output_bytes = static_cast<std::uint64_t>(m.output_mb * MB);
    l.param_bytes = static_cast<std::uint64_t>(m.param_mb * MB);
    l.optimizer_bytes = 0;
    l.optimizer_ms = m.optimizer_ms;
    out.layers.push_back(l);
  }
}
}  // namespace

LayerProfile analytic_layer(const JobSpec& job, std::string name, std::string type, double fwd_flops,
                            double bwd_flops, double activation_bytes, double input_bytes, double output_bytes,
                            double params) {
  return make_layer(std::move(name), std::move(type), fwd_flops, bwd_flops, activation_bytes, input_bytes,
                    output_bytes, params, units_for(job));
}

ModelProfile analytic_profile(const JobSpec& job) {
  ModelProfile p;
  p.microbatch_size = job.training.microbatch_size;
  p.device = job.cluster.device.preset;
  p.source = "analytic";
  const std::string& k = job.model.kind;
  if (k == "bert" || k == "gpt" || k == "transformer")
    transformer_layers(job, p);
  else if (k == "mlp")
    mlp_layers(job, p);
  else if (k == "cnn")
    cnn_layers(job, p);
  else
    uniform_layers(job, p);
  return p;
}

bool tensor_splits_measured(const LayerProfile& l) {
  return l.type == "attention" || l.type == "cross_attention" || l.type == "ffn";
}

void split_measured_layer(const JobSpec& job, LayerProfile& l) {
  const int t = job.parallel.tensor;
  if (t <= 1 || !tensor_splits_measured(l)) return;
  const Units u = units_for(job);
  const double w_share = l.bwd_ms > 0 && l.bwd_weight_ms >= 0 ? l.bwd_weight_ms / l.bwd_ms : -1;
  // The analytic blocks' kernels: one dispatch forward, two backward.
  std::tie(l.fwd_ms, l.fwd_fixed_ms) = shard_of_measured(l.fwd_ms, 1, t, u);
  std::tie(l.bwd_ms, l.bwd_fixed_ms) = shard_of_measured(l.bwd_ms, 2, t, u);
  if (w_share >= 0) l.bwd_weight_ms = w_share * l.bwd_ms;  // W keeps its share of the shard's backward
  add_tensor_collectives(job, hidden_bytes_of(job), l);
}

}  // namespace pw

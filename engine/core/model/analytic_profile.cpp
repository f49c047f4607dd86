#include "core/model/analytic_profile.h"

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

void transformer_layers(const JobSpec& job, ModelProfile& out) {
  const auto& m = job.model;
  Units u = units_for(job);
  double b = job.training.microbatch_size, s = m.seq_len, h = m.hidden, a = m.heads, f = m.ffn_mult;
  double tokens = b * s;
  double sbh = tokens * h * u.act_scale;  // bytes of one [s,b,h] fp16 tensor / 2
  double hidden_bytes = 2 * sbh;          // one [s,b,h] tensor
  // Embedding: a gather; costs are memory-bound, activation = dropout mask.
  double emb_params = (m.vocab + s) * h;
  out.layers.push_back(make_layer("embedding", "embedding", 0, 0, sbh, tokens * 8, hidden_bytes, emb_params, u, -1, 2));
  const double gather_ms = (tokens * h * 2 * u.weight_b) / (u.mem_gbs * 1e9) * 1e3;
  std::tie(out.layers.back().fwd_ms, out.layers.back().fwd_fixed_ms) = with_fixed(gather_ms, 1, u);
  std::tie(out.layers.back().bwd_ms, out.layers.back().bwd_fixed_ms) = with_fixed(2 * gather_ms, 2, u);
  // Its input is token ids: the whole backward is the table's gradient (W).
  out.layers.back().bwd_weight_ms = out.layers.back().bwd_ms;

  // Attention block incl. its layer norm: 11 s b h + 5 a s^2 b (+2 sbh LN).
  auto attention = [&](const std::string& name, bool cross) {
    double flops = tokens * (8 * h * h + 4 * s * h);
    double act = 13 * sbh + 5 * a * s * s * b * u.act_scale;
    if (cross) act += 2 * sbh;  // encoder output is kept too
    double params = 4 * h * h + 4 * h + 2 * h;
    // W: the four projections' weight gradients, one forward's worth of
    // their FLOPs; the score/context matmuls have no weights (all B).
    out.layers.push_back(make_layer(name, cross ? "cross_attention" : "attention", flops, 2 * flops, act,
                                    hidden_bytes, hidden_bytes, params, u, tokens * 8 * h * h, 10));
  };
  // FFN block: 2 sbh in + 8 sbh up + 8 sbh activation + sbh dropout mask,
  // scaled by the width multiple (4 in the formula), + 2 sbh LN.
  auto ffn = [&](const std::string& name) {
    double flops = tokens * 4 * f * h * h;
    double act = (2 + 4 * f + 1 + 2) * sbh;
    double params = 2 * f * h * h + f * h + h + 2 * h;
    out.layers.push_back(make_layer(name, "ffn", flops, 2 * flops, act, hidden_bytes, hidden_bytes, params, u, flops, 6));
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
  double head_flops = tokens * 2 * h * m.vocab;
  double logits = tokens * m.vocab * 4;
  bool tied = m.kind == "gpt";  // GPT ties the head to the embedding
  out.layers.push_back(make_layer("head", "head", head_flops, 2 * head_flops, logits + hidden_bytes, hidden_bytes,
                                  0, tied ? 0 : h * m.vocab, u, head_flops, tied ? 0 : 1));
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

}  // namespace pw

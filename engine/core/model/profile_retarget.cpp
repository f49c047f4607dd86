#include "core/model/profile_retarget.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace pw {
namespace {

std::uint64_t scaled(std::uint64_t bytes, double f) {
  return static_cast<std::uint64_t>(std::llround(static_cast<double>(bytes) * f));
}

std::string ratio(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace

ModelProfile rescale_microbatch(const ModelProfile& p, int to) {
  if (to <= 0 || p.microbatch_size <= 0 || p.microbatch_size == to) return p;
  ModelProfile q = p;
  double f = static_cast<double>(to) / p.microbatch_size;
  for (auto& l : q.layers) {
    l.fwd_ms *= f;
    l.bwd_ms *= f;
    if (l.bwd_weight_ms > 0) l.bwd_weight_ms *= f;
    l.activation_bytes = scaled(l.activation_bytes, f);
    l.input_bytes = scaled(l.input_bytes, f);
    l.output_bytes = scaled(l.output_bytes, f);
  }
  for (auto& c : q.cut_bytes) c = scaled(c, f);
  q.microbatch_size = to;
  q.assumptions.push_back("times and activation bytes scaled linearly from the profiled minibatch " +
                          std::to_string(p.microbatch_size) + " to microbatch " + std::to_string(to) + " (x" +
                          ratio(f) + ")" + (f < 1 ? "; small microbatches use the device less well, so real times "
                                                    "are likely higher"
                                                  : ""));
  return q;
}

bool compute_bound_layer(const LayerProfile& l) {
  std::string t = l.type;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  // Parameterless layers are elementwise or data movement whatever their name.
  if (l.param_bytes == 0 && t.find("attention") == std::string::npos) return false;
  for (const char* k : {"conv", "linear", "lstm", "gru", "rnn", "attention", "ffn", "classifier", "head", "matmul"})
    if (t.find(k) != std::string::npos) return true;
  return false;
}

ModelProfile retarget_profile(const ModelProfile& p, const DeviceSpec& from, const DeviceSpec& to) {
  ModelProfile q = p;
  double compute = from.tflops / to.tflops;
  double memory = from.mem_bandwidth_gbs / to.mem_bandwidth_gbs;
  int bound = 0;
  for (auto& l : q.layers) {
    double f = compute_bound_layer(l) ? compute : memory;
    bound += compute_bound_layer(l);
    l.fwd_ms *= f;
    l.bwd_ms *= f;
    if (l.bwd_weight_ms > 0) l.bwd_weight_ms *= f;
    l.optimizer_ms *= memory;
  }
  q.device = to.preset;
  q.assumptions.push_back("profile measured on " + (from.preset.empty() ? std::string("?") : from.preset) +
                          " re-targeted to " + to.preset + ": " + std::to_string(bound) + " compute-bound layers x" +
                          ratio(compute) + " (TFLOP/s " + ratio(from.tflops) + " -> " + ratio(to.tflops) + "), " +
                          std::to_string(q.size() - bound) + " memory-bound layers and the optimizer step x" +
                          ratio(memory) + " (GB/s " + ratio(from.mem_bandwidth_gbs) + " -> " +
                          ratio(to.mem_bandwidth_gbs) + "); bytes unchanged");
  return q;
}

}  // namespace pw

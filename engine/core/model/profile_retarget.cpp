#include "core/model/profile_retarget.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/model/microbatch_curve.h"

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

namespace {

// One phase's time at microbatch `to`, from the layer's table when it has
// one, else affine through `ms` (measured at `from`) with fixed part `fixed`.
double phase_at(const std::vector<MicrobatchTimes>& table, double MicrobatchTimes::*phase, double ms, double fixed,
                int from, int to) {
  if (table.size() > 1) {
    std::vector<SizedTime> pts;
    for (const auto& r : table) pts.push_back({static_cast<double>(r.microbatch), r.*phase});
    return time_at_microbatch(pts, to);
  }
  const double alpha = std::clamp(fixed, 0.0, ms);
  return alpha + (ms - alpha) * to / from;
}

}  // namespace

ModelProfile rescale_microbatch(const ModelProfile& p, int to) {
  if (to <= 0 || p.microbatch_size <= 0 || p.microbatch_size == to) return p;
  ModelProfile q = p;
  const int from = p.microbatch_size;
  double f = static_cast<double>(to) / from;
  int tables = 0, affine = 0;
  for (auto& l : q.layers) {
    const double bwd_before = l.bwd_ms;
    const bool table = l.by_microbatch.size() > 1;
    tables += table;
    affine += !table && (l.fwd_fixed_ms > 0 || l.bwd_fixed_ms > 0);
    l.fwd_ms = phase_at(l.by_microbatch, &MicrobatchTimes::fwd_ms, l.fwd_ms, l.fwd_fixed_ms, from, to);
    l.bwd_ms = phase_at(l.by_microbatch, &MicrobatchTimes::bwd_ms, l.bwd_ms, l.bwd_fixed_ms, from, to);
    bool w_measured = table && std::all_of(l.by_microbatch.begin(), l.by_microbatch.end(),
                                           [](const MicrobatchTimes& r) { return r.bwd_weight_ms >= 0; });
    if (w_measured)
      l.bwd_weight_ms = std::min(l.bwd_ms, phase_at(l.by_microbatch, &MicrobatchTimes::bwd_weight_ms, 0, 0, from, to));
    else if (l.bwd_weight_ms > 0 && bwd_before > 0)
      l.bwd_weight_ms *= l.bwd_ms / bwd_before;  // W keeps its share of the backward
    l.activation_bytes = scaled(l.activation_bytes, f);
    l.input_bytes = scaled(l.input_bytes, f);
    l.output_bytes = scaled(l.output_bytes, f);
  }
  for (auto& c : q.cut_bytes) c = scaled(c, f);
  q.microbatch_size = to;
  const std::string sizes = "the profiled minibatch " + std::to_string(from) + " to microbatch " + std::to_string(to);
  if (tables > 0)
    q.assumptions.push_back("times at microbatch " + std::to_string(to) + " from the sizes measured (" +
                            std::to_string(tables) + " of " + std::to_string(q.size()) +
                            " layers: piecewise linear between sizes, affine beyond); bytes scaled linearly from " + sizes);
  else if (affine > 0)
    q.assumptions.push_back("times scaled from " + sizes + " as a fixed part per microbatch plus a part per sample "
                            "(affine); bytes linearly (x" + ratio(f) + ")");
  else
    q.assumptions.push_back("times and activation bytes scaled linearly from " + sizes + " (x" + ratio(f) +
                            "): the profile has no per-microbatch term" +
                            (f < 1 ? "; small microbatches use the device less well, so real times are likely higher "
                                     "(measure several sizes: pipewright profile --microbatch-sizes)"
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
    l.fwd_fixed_ms *= f;
    l.bwd_fixed_ms *= f;
    for (auto& r : l.by_microbatch) {
      r.fwd_ms *= f;
      r.bwd_ms *= f;
      if (r.bwd_weight_ms > 0) r.bwd_weight_ms *= f;
    }
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

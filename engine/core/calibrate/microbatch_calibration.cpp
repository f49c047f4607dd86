#include "core/calibrate/microbatch_calibration.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/model/profile_retarget.h"

namespace pw {
namespace {

// Measured over profiled at the sizes run, as a function of the size:
// piecewise linear between them, the nearest one's beyond.
double ratio_at(const std::vector<SizedTime>& ratios, double b) {
  if (ratios.empty()) return 1;
  if (b <= ratios.front().microbatch) return ratios.front().ms;
  if (b >= ratios.back().microbatch) return ratios.back().ms;
  return time_at_microbatch(ratios, b);
}

bool same_ranges(const std::vector<MeasuredStageCompute>& a, const std::vector<MeasuredStageCompute>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].range.first_layer != b[i].range.first_layer || a[i].range.last_layer != b[i].range.last_layer) return false;
  return true;
}

}  // namespace

ModelProfile calibrate_profile_at_sizes(const ModelProfile& profile,
                                        const std::map<int, std::vector<MeasuredStageCompute>>& by_size,
                                        std::vector<StageSizeFit>* fits) {
  if (by_size.empty()) return profile;
  const std::vector<MeasuredStageCompute>& first = by_size.begin()->second;
  for (const auto& [b, m] : by_size)
    if (!same_ranges(m, first))
      throw std::invalid_argument("the in-situ run at microbatch " + std::to_string(b) +
                                  " used another partition than the one at " + std::to_string(by_size.begin()->first));
  // Every layer's times at every size of its table and every size run.
  std::set<int> sizes;
  for (const auto& [b, m] : by_size) sizes.insert(b);
  for (const auto& l : profile.layers)
    for (const auto& r : l.by_microbatch) sizes.insert(r.microbatch);
  std::map<int, ModelProfile> at;
  for (int b : sizes) at.emplace(b, rescale_microbatch(profile, b));

  ModelProfile p = profile;
  for (int l = 0; l < p.size(); ++l) {
    auto& rows = p.layers[l].by_microbatch;
    rows.clear();
    for (int b : sizes) {
      const LayerProfile& q = at.at(b).layers[l];
      rows.push_back({b, q.fwd_ms, q.bwd_ms, q.bwd_weight_ms});
    }
    p.layers[l].fwd_fixed_ms = p.layers[l].bwd_fixed_ms = 0;  // the table speaks for every size
  }
  std::ostringstream note;
  note.precision(3);
  note << "compute calibrated in situ at microbatch";
  for (const auto& [b, m] : by_size) note << " " << b;
  note << " (per stage: measured ms per microbatch = alpha + beta x size):";
  const char* sep = " ";
  if (fits) fits->clear();
  for (std::size_t s = 0; s < first.size(); ++s) {
    const StageRange range = first[s].range;
    if (range.first_layer < 0 || range.last_layer >= p.size() || range.first_layer > range.last_layer) continue;
    StageSizeFit fit;
    fit.range = range;
    std::vector<SizedTime> fwd_ratio, bwd_ratio;
    for (const auto& [b, m] : by_size) {
      double fwd = 0, bwd = 0;
      for (int l = range.first_layer; l <= range.last_layer; ++l) fwd += at.at(b).layers[l].fwd_ms, bwd += at.at(b).layers[l].bwd_ms;
      const MeasuredStageCompute& ms = m[s];
      fit.fwd.push_back({static_cast<double>(b), ms.fwd_ms});
      fit.bwd.push_back({static_cast<double>(b), ms.bwd_ms});
      fwd_ratio.push_back({static_cast<double>(b), fwd > 0 && ms.fwd_ms > 0 ? ms.fwd_ms / fwd : 1});
      bwd_ratio.push_back({static_cast<double>(b), bwd > 0 && ms.bwd_ms > 0 ? ms.bwd_ms / bwd : 1});
    }
    fit.fwd_fit = fit_affine(fit.fwd);
    fit.bwd_fit = fit_affine(fit.bwd);
    for (int l = range.first_layer; l <= range.last_layer; ++l)
      for (auto& r : p.layers[l].by_microbatch) {
        const double ff = ratio_at(fwd_ratio, r.microbatch), fb = ratio_at(bwd_ratio, r.microbatch);
        r.fwd_ms *= ff;
        r.bwd_ms *= fb;
        if (r.bwd_weight_ms > 0) r.bwd_weight_ms *= fb;
      }
    note << sep << "layers " << range.first_layer << "-" << range.last_layer << " forward " << fit.fwd_fit.alpha_ms
         << " + " << fit.fwd_fit.beta_ms << " b, backward " << fit.bwd_fit.alpha_ms << " + " << fit.bwd_fit.beta_ms << " b";
    sep = "; ";
    if (fits) fits->push_back(fit);
  }
  // The profile's own size reads from its (calibrated) rows.
  for (auto& l : p.layers) {
    std::vector<SizedTime> f, b, w;
    bool has_w = true;
    for (const auto& r : l.by_microbatch) {
      f.push_back({static_cast<double>(r.microbatch), r.fwd_ms});
      b.push_back({static_cast<double>(r.microbatch), r.bwd_ms});
      w.push_back({static_cast<double>(r.microbatch), r.bwd_weight_ms});
      has_w = has_w && r.bwd_weight_ms >= 0;
    }
    l.fwd_ms = time_at_microbatch(f, p.microbatch_size);
    l.bwd_ms = time_at_microbatch(b, p.microbatch_size);
    if (has_w) l.bwd_weight_ms = std::min(l.bwd_ms, time_at_microbatch(w, p.microbatch_size));
  }
  // The optimizer step does not depend on the size: the largest run's
  // measurement (the longest actions, the least relative noise) scales it.
  const std::vector<MeasuredStageCompute>& last = by_size.rbegin()->second;
  std::map<int, double> device_profiled, device_measured;
  for (const auto& m : last) {
    if (m.range.first_layer < 0 || m.range.last_layer >= p.size()) continue;
    for (int l = m.range.first_layer; l <= m.range.last_layer; ++l) device_profiled[m.device] += profile.layers[l].optimizer_ms;
    device_measured[m.device] = m.optimizer_ms;
  }
  for (const auto& m : last) {
    if (m.range.first_layer < 0 || m.range.last_layer >= p.size()) continue;
    const double prof = device_profiled[m.device], meas = device_measured[m.device];
    const double fo = prof > 0 && meas > 0 ? meas / prof : 1;
    for (int l = m.range.first_layer; l <= m.range.last_layer; ++l) p.layers[l].optimizer_ms = profile.layers[l].optimizer_ms * fo;
  }
  p.assumptions.push_back(note.str());
  return p;
}

}  // namespace pw

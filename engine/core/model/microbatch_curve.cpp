#include "core/model/microbatch_curve.h"

#include <algorithm>

namespace pw {

AffineTime fit_affine(const std::vector<SizedTime>& pts) {
  if (pts.empty()) return {};
  double n = static_cast<double>(pts.size()), sb = 0, st = 0, sbb = 0, sbt = 0;
  for (const auto& p : pts) sb += p.microbatch, st += p.ms, sbb += p.microbatch * p.microbatch, sbt += p.microbatch * p.ms;
  // Through the origin: the best proportional line.
  auto proportional = [&] { return AffineTime{0, sbb > 0 ? std::max(0.0, sbt / sbb) : 0}; };
  double den = n * sbb - sb * sb;
  if (pts.size() < 2 || den <= 0) return proportional();
  AffineTime f;
  f.beta_ms = (n * sbt - sb * st) / den;
  f.alpha_ms = (st - f.beta_ms * sb) / n;
  if (f.alpha_ms < 0) return proportional();
  if (f.beta_ms < 0) return {std::max(0.0, st / n), 0};  // flat: the mean
  return f;
}

double time_at_microbatch(const std::vector<SizedTime>& table, double b) {
  if (table.empty()) return 0;
  std::vector<SizedTime> t = table;
  std::sort(t.begin(), t.end(), [](const SizedTime& x, const SizedTime& y) { return x.microbatch < y.microbatch; });
  for (std::size_t i = 0; i + 1 < t.size(); ++i)
    if (b >= t[i].microbatch && b <= t[i + 1].microbatch) {
      double w = (b - t[i].microbatch) / (t[i + 1].microbatch - t[i].microbatch);
      return t[i].ms + w * (t[i + 1].ms - t[i].ms);
    }
  const double slope = fit_affine(t).beta_ms;
  if (b > t.back().microbatch) return t.back().ms + slope * (b - t.back().microbatch);
  const SizedTime& first = t.front();
  if (first.microbatch <= 0) return first.ms;
  return std::max(first.ms * b / first.microbatch, first.ms - slope * (first.microbatch - b));
}

}  // namespace pw

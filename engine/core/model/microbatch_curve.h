#pragma once
#include <vector>

namespace pw {

// A time measured (or derived) at one microbatch size.
struct SizedTime {
  double microbatch = 0;
  double ms = 0;
};

// t(b) = alpha + beta * b: alpha is what a microbatch costs whatever its
// size (kernel launches, dispatch, a GEMM's tail that does not fill the
// device), beta what each sample adds.
struct AffineTime {
  double alpha_ms = 0;
  double beta_ms = 0;
  double at(double b) const { return alpha_ms + beta_ms * b; }
};

// Least-squares line through `points` with alpha >= 0 and beta >= 0 (a
// negative intercept or slope is measurement noise, not a device: the fit
// is then redone with that term at zero). One point gives the proportional
// line through it (alpha 0), none gives zero.
AffineTime fit_affine(const std::vector<SizedTime>& points);

// A time at microbatch `b` from a table of measured sizes (any order, sizes
// distinct): piecewise linear between measured sizes; beyond them along
// the table's affine fit, anchored at the nearest end so the curve is
// continuous, and below the smallest size never under proportional scaling from it (a
// smaller microbatch is never cheaper per sample than the smallest one
// measured). An empty table gives 0.
double time_at_microbatch(const std::vector<SizedTime>& table, double b);

}  // namespace pw

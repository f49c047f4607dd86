#include "core/spec/learning_rate.h"

#include <algorithm>
#include <cmath>

namespace pw {

double learning_rate_at(const TrainingSpec& t, double progress) {
  if (t.warmup > 0 && progress < t.warmup) return t.lr * (progress + 1) / t.warmup;
  if (t.lr_schedule != "cosine") return t.lr;
  const double span = std::max(1, t.iterations - t.warmup);
  const double x = std::clamp((progress - t.warmup) / span, 0.0, 1.0);
  return t.lr * 0.5 * (1 + std::cos(M_PI * x));
}

}  // namespace pw

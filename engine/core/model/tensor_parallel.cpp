#include "core/model/tensor_parallel.h"

#include <string>


namespace pw {

double korthikanti_layer_activation_bytes(double s, double b, double h, double a, int t, bool sequence,
                                          bool selective) {
  const double tt = t < 1 ? 1 : t;
  const double core = selective ? 0.0 : 5.0 * a * s / (h * tt);
  const double linear = sequence ? 34.0 / tt : 10.0 + 24.0 / tt;
  return s * b * h * (linear + core);
}

double tensor_allreduce_ms(std::uint64_t bytes, int t, const LinkSpeed& link) {
  return ring_allreduce_ms(bytes, t, link);
}

TensorCollectives tensor_collectives_of(const std::string& type) {
  if (type == "attention" || type == "cross_attention" || type == "ffn") return {1, 1};
  if (type == "embedding") return {1, 0};
  if (type == "head") return {0, 1};
  return {0, 0};
}

}  // namespace pw

#include "core/model/layer_profile.h"

#include <algorithm>

namespace pw {

std::uint64_t w_stash_bytes(const LayerProfile& l) {
  const std::uint64_t H = l.input_bytes;
  const bool attention = l.type.find("attention") != std::string::npos;
  // No weights and no measured W: there is no W to wait for.
  if (l.param_bytes == 0 && !attention && !(l.bwd_weight_ms > 0)) return 0;
  if (l.type == "attention") return 6 * H;
  if (l.type == "cross_attention") return 7 * H;
  if (l.type == "ffn" && H > 0) {
    // kept = (5 + 4f) / 2 H  =>  (2 + 2f) H = kept - H / 2.
    const double f = std::max(1.0, (2.0 * static_cast<double>(l.activation_bytes) / static_cast<double>(H) - 5.0) / 4.0);
    return static_cast<std::uint64_t>((2.0 + 2.0 * f) * static_cast<double>(H));
  }
  if (l.type == "head") return std::max(l.activation_bytes, H);
  if (l.type == "conv3x3+relu+pool" && l.activation_bytes > H) return H + (l.activation_bytes - H) / 2;
  return l.input_bytes + l.output_bytes;
}

}  // namespace pw

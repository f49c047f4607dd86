#include "core/spec/tensor_split.h"

namespace pw {

std::optional<std::string> tensor_split_refusal(const ModelSpec& m, int t) {
  if (t <= 1) return std::nullopt;
  const std::string ranks = std::to_string(t) + " tensor ranks do not divide ";
  if (m.heads % t != 0) return ranks + "model.heads (" + std::to_string(m.heads) + "): attention is split by heads";
  const long long ffn = static_cast<long long>(m.ffn_mult) * m.hidden;
  if (ffn % t != 0)
    return ranks + "the FFN width model.ffn_mult x model.hidden (" + std::to_string(ffn) +
           "): the FFN is split by its width";
  if (m.vocab % t != 0) {
    // Megatron's padding (make_vocab_size_divisible_by 128, times t).
    const long long unit = 128LL * t;
    const long long padded = (m.vocab + unit - 1) / unit * unit;
    return ranks + "the vocabulary of " + std::to_string(m.vocab) +
           " tokens (model.vocab): the embedding and the head are split by vocabulary; set model.vocab to a "
           "multiple of " + std::to_string(t) + " (Megatron pads it to " + std::to_string(padded) +
           ", a multiple of 128 x " + std::to_string(t) + ")";
  }
  return std::nullopt;
}

}  // namespace pw

#include "core/plan/layer_list.h"

namespace pw {

std::string layer_list(const std::vector<int>& layers) {
  std::string out;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(layers[i]) + (j > i ? "-" + std::to_string(layers[j]) : "");
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

}  // namespace pw

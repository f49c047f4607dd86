#include "core/model/microbatch_profile.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pw {

ModelProfile merge_microbatch_profiles(const std::vector<ModelProfile>& measured, int base_microbatch) {
  std::vector<const ModelProfile*> by_size;
  for (const auto& p : measured) by_size.push_back(&p);
  std::sort(by_size.begin(), by_size.end(),
            [](const ModelProfile* a, const ModelProfile* b) { return a->microbatch_size < b->microbatch_size; });
  const ModelProfile* base = nullptr;
  for (std::size_t i = 0; i < by_size.size(); ++i) {
    if (i > 0 && by_size[i]->microbatch_size == by_size[i - 1]->microbatch_size)
      throw std::invalid_argument("microbatch size " + std::to_string(by_size[i]->microbatch_size) + " measured twice");
    if (by_size[i]->microbatch_size == base_microbatch) base = by_size[i];
  }
  if (!base) throw std::invalid_argument("no profile at the base microbatch size " + std::to_string(base_microbatch));
  ModelProfile out = *base;
  for (const ModelProfile* p : by_size) {
    if (p->size() != base->size())
      throw std::invalid_argument("the profile at microbatch " + std::to_string(p->microbatch_size) + " has " +
                                  std::to_string(p->size()) + " layers, the one at " + std::to_string(base_microbatch) +
                                  " " + std::to_string(base->size()));
    for (int l = 0; l < p->size(); ++l) {
      const LayerProfile& m = p->layers[l];
      if (m.name != base->layers[l].name)
        throw std::invalid_argument("layer " + std::to_string(l) + " is \"" + m.name + "\" at microbatch " +
                                    std::to_string(p->microbatch_size) + ", \"" + base->layers[l].name + "\" at " +
                                    std::to_string(base_microbatch));
      out.layers[l].by_microbatch.push_back({p->microbatch_size, m.fwd_ms, m.bwd_ms, m.bwd_weight_ms});
    }
  }
  return out;
}

}  // namespace pw

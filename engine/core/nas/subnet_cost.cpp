#include "core/nas/subnet_cost.h"

#include <stdexcept>
#include <string>

namespace pw::nas {

double subnet_latency_ms(const SearchSpace& space, const Subnet& subnet) {
  if (static_cast<int>(subnet.size()) != space.size())
    throw std::invalid_argument("subnet " + to_string(subnet) + " has " + std::to_string(subnet.size()) +
                                " choices, the search space " + std::to_string(space.size()) + " choice layers");
  double t = 0;
  if (space.has_stem) t += space.stem.fwd_ms;
  for (int l = 0; l < space.size(); ++l) {
    if (subnet[l] < 0 || subnet[l] >= space.layers[l].choices())
      throw std::invalid_argument("subnet " + to_string(subnet) + ": choice " + std::to_string(subnet[l]) +
                                  " of layer " + std::to_string(l) + " is outside 0.." +
                                  std::to_string(space.layers[l].choices() - 1));
    t += space.layers[l].candidates[subnet[l]].cost.fwd_ms;
  }
  if (space.has_head) t += space.head.fwd_ms;
  return t;
}

}  // namespace pw::nas

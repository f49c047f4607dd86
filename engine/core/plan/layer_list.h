#pragma once
#include <string>
#include <vector>

namespace pw {

// Layer indices (ascending) as compact ranges, "3-5,9"; "-" for none: how
// `plan` and `explain` name the layers of a memory policy.
std::string layer_list(const std::vector<int>& layers);

}  // namespace pw

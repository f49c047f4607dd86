#pragma once
#include <string>
#include <vector>

namespace pw::nas {

// The names parse_search_space accepts, so that editors (the studio's
// search-space editor) offer exactly these and never a copy of them.
struct SearchSpaceNames {
  std::vector<std::string> builtins;    // search_space.builtin
  std::vector<std::string> ops;         // layers[i].candidates[j].op
  std::vector<std::string> partitions;  // search_space.partition, default first
  std::vector<std::string> samplers;    // search_space.sampler, default first
  std::vector<std::string> shared;      // search_space.shared, default first
};
const SearchSpaceNames& search_space_names();

}  // namespace pw::nas

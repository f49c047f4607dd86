#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/nas/search_space.h"

namespace pw::nas {

// One subnet: the chosen candidate index for every choice layer.
using Subnet = std::vector<int>;

// Subnet `id` of the uniform sampler: a pure function of (seed, id), so any
// process computes the same sequence without talking to the others.
Subnet uniform_subnet(const SearchSpace& space, std::uint64_t seed, std::int64_t id);

// A user-supplied list: one subnet per line, choice indices separated by
// spaces or commas; blank lines and '#' comments ignored. Throws
// std::runtime_error naming the file and line for a wrong length or an
// index out of range.
std::vector<Subnet> load_subnet_list(const std::string& file, const SearchSpace& space);
// Same, from text already read; `name` is used in error messages.
std::vector<Subnet> parse_subnet_list(const std::string& text, const std::string& name, const SearchSpace& space);

// The job's training sequence, in data order (sequence id = position):
// `count` subnets from the space's sampler; a list file is cycled.
std::vector<Subnet> subnet_sequence(const SearchSpace& space, std::uint64_t seed, int count);

std::string to_string(const Subnet& s);

}  // namespace pw::nas

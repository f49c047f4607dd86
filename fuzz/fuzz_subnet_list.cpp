// The subnet list reader (search_space.sampler "list", core/nas/subnet).
// The space is a fixed uniform one with layers of 1..5 choices so that
// every index check is reachable. Malformed lists are refused with
// std::runtime_error naming file and line; anything else is a finding.
#include <cstdint>
#include <stdexcept>

#include "core/nas/subnet.h"
#include "fuzz_input.h"

namespace {
const pw::nas::SearchSpace& space() {
  static const pw::nas::SearchSpace s = [] {
    pw::nas::SearchSpace sp;
    sp.kind = "uniform";
    for (int l = 0; l < 5; ++l) {
      pw::nas::ChoiceLayer layer{"layer" + std::to_string(l), {}};
      for (int c = 0; c <= l; ++c) layer.candidates.push_back(pw::nas::Candidate{});
      sp.layers.push_back(layer);
    }
    return sp;
  }();
  return s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)pw::nas::parse_subnet_list(pw::fuzz::text_of(data, size), "subnets.txt", space());
  } catch (const std::runtime_error&) {
  }
  return 0;
}

#include "core/nas/search_space_fields.h"

#include <stdexcept>
#include <string>

#include "core/spec/spec_bounds.h"

namespace pw::nas {

const std::vector<SpaceField>& search_space_fields() {
  using namespace bounds;
  using S = SpaceScope;
  static const std::vector<SpaceField> rows = {
      {"builtin", S::Space, false},
      {"layers", S::Space, false},
      {"replication", S::Space, true, 1, 64},
      {"window", S::Space, true, 1, 4096, true, /*resume_may_change=*/true},
      {"partition", S::Space, false},
      {"device_budget_gb", S::Space, true, 0, kMemoryGb, false},
      {"shared", S::Space, false},
      {"sampler", S::Space, false},
      {"subnet_file", S::Space, false},
      {"search", S::Space, false, 0, 0, true, /*resume_may_change=*/true},
      // fmnist-cnn and uniform
      {"choice_layers", S::Space, true, 1, kLayers},
      {"kernels", S::Space, true, 1, kImageSize},  // each entry of the list
      {"widths", S::Space, true, 1, kHidden},      // each entry of the list
      {"skip", S::Space, false},
      // parse_search_space bounds choice_layers x choices as well (every
      // candidate is held in memory).
      {"choices", S::Space, true, 1, 1 << 20},
      // Custom layers.
      {"name", S::Layer, false},
      {"repeat", S::Layer, true, 1, kLayers},
      {"candidates", S::Layer, false},
      {"op", S::Candidate, false},
      {"kernel", S::Candidate, true, 1, kSeqLen},
      {"heads", S::Candidate, true, 1, kHidden},
      // A uniform candidate's costs (and the uniform builtin's, at search_space level).
      {"fwd_ms", S::Candidate, true, 0, kLayerMs, false},
      {"bwd_ms", S::Candidate, true, 0, kLayerMs, false},
      {"param_mb", S::Candidate, true, 0, kLayerMb, false},
      {"activation_mb", S::Candidate, true, 0, kLayerMb, false},
      {"output_mb", S::Candidate, true, 0, kLayerMb, false},
      {"optimizer_ms", S::Candidate, true, 0, kLayerMs, false},
  };
  return rows;
}

const SpaceField& search_space_field(std::string_view key, SpaceScope scope) {
  for (const auto& r : search_space_fields())
    if (r.key == key && r.scope == scope) return r;
  throw std::out_of_range("no search-space field \"" + std::string(key) + "\"");
}

}  // namespace pw::nas

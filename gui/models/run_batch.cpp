#include "gui/models/run_batch.h"

#include <algorithm>

namespace pw::gui {

std::array<std::int64_t, kMemoryCategoryCount> memory_categories(const MemorySample& m) {
  auto z = [](std::int64_t v) { return std::max<std::int64_t>(0, v); };
  return {z(m.parameters), z(m.optimizer), z(m.stashed), z(m.activations), z(m.swapped_out), z(m.prefetched)};
}

const char* memory_category_name(int c) {
  static const char* names[kMemoryCategoryCount] = {"parameters",  "optimizer",   "stashed weights",
                                                    "activations", "swapped out", "prefetched"};
  return c >= 0 && c < kMemoryCategoryCount ? names[c] : "?";
}

bool has_memory_breakdown(const MemorySample& m) {
  return m.parameters >= 0 || m.optimizer >= 0 || m.stashed >= 0 || m.activations >= 0;
}

}  // namespace pw::gui

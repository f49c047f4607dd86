#include "core/plan/minmax_partition.h"

#include <limits>
#include <stdexcept>
#include <string>

namespace pw {

std::vector<StageRange> minmax_partition(int layers, int parts, const RangeCost& cost, double* bottleneck) {
  if (parts < 1 || parts > layers)
    throw std::invalid_argument("cannot split " + std::to_string(layers) + " layers into " + std::to_string(parts) +
                                " stages");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const size_t L = static_cast<size_t>(layers);
  // best[s][j]: layers [0, j] on stages 0..s; split[s][j]: last layer of stage s-1.
  std::vector<std::vector<double>> best(parts, std::vector<double>(L, kInf));
  std::vector<std::vector<int>> split(parts, std::vector<int>(L, -1));
  for (int j = 0; j < layers; ++j) best[0][j] = cost(0, j);
  for (int s = 1; s < parts; ++s) {
    // Stage s ends at j >= s and leaves a layer for each later stage.
    for (int j = s; j <= layers - parts + s; ++j) {
      for (int k = s - 1; k < j; ++k) {
        if (best[s - 1][k] == kInf) continue;
        double t = std::max(best[s - 1][k], cost(k + 1, j));
        if (t < best[s][j]) {
          best[s][j] = t;
          split[s][j] = k;
        }
      }
    }
  }
  std::vector<StageRange> ranges(parts);
  int last = layers - 1;
  for (int s = parts - 1; s >= 0; --s) {
    int first = s == 0 ? 0 : split[s][last] + 1;
    ranges[s] = {first, last};
    last = first - 1;
  }
  if (bottleneck) *bottleneck = best[parts - 1][layers - 1];
  return ranges;
}

}  // namespace pw

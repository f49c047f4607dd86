#include "runtime/migration/settings.h"

namespace pw::rt::migration {

Plan with_stages(const Plan& base, const std::vector<StageRange>& stages) {
  Plan p = base;
  p.stages = stages;
  p.layers_moved = layers_moved(base, p);
  p.predicted.clear();
  return p;
}

}  // namespace pw::rt::migration

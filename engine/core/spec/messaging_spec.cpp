#include "core/spec/messaging_spec.h"

namespace pw {

std::string cluster_messaging(const JobSpec& job) {
  const auto& raw = job.raw;
  if (!raw.is_object() || !raw.contains("cluster") || !raw["cluster"].is_object()) return "tagged";
  const auto& c = raw["cluster"];
  if (!c.contains("messaging") || !c["messaging"].is_string()) return "tagged";
  return c["messaging"].get<std::string>();
}

}  // namespace pw

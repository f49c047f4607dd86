#include "core/calibrate/send_cost.h"

#include <algorithm>
#include <map>

#include "core/calibrate/stage_compute.h"

namespace pw {

std::optional<SendCost> fit_send_cost(const std::vector<Event>& events) {
  std::map<int, std::int64_t> warm = warm_from(events);
  std::map<double, std::vector<double>> us_by_bytes;
  for (const auto& e : events)
    if (e.kind == EventKind::Send && e.start_ns >= warm[e.stage])
      us_by_bytes[static_cast<double>(e.bytes)].push_back(static_cast<double>(e.end_ns - e.start_ns) / 1e3);
  if (us_by_bytes.empty()) return std::nullopt;
  std::vector<double> bytes, us;
  for (auto& [b, v] : us_by_bytes) {
    double sum = 0;
    for (double x : v) sum += x;
    bytes.push_back(b);
    us.push_back(sum / static_cast<double>(v.size()));
  }
  const double n = static_cast<double>(us.size());
  double mb = 0, mu = 0;
  for (size_t i = 0; i < us.size(); ++i) mb += bytes[i] / n, mu += us[i] / n;
  double sbb = 0, sbu = 0;
  for (size_t i = 0; i < us.size(); ++i) sbb += (bytes[i] - mb) * (bytes[i] - mb), sbu += (bytes[i] - mb) * (us[i] - mu);
  const double slope = sbb > 0 ? sbu / sbb : 0;  // us per byte
  if (slope > 0) return SendCost{std::max(0.0, mu - slope * mb), 8.0 / (slope * 1e3)};
  return SendCost{mu, 0};
}

}  // namespace pw

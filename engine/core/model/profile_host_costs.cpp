#include "core/model/profile_host_costs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace pw {
namespace {

double non_negative(const nlohmann::json& v, const std::string& path) {
  if (!v.is_number()) throw std::runtime_error(path + ": must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0) throw std::runtime_error(path + ": must be a finite number >= 0");
  return x;
}

}  // namespace

nlohmann::json host_costs_to_json(const ProfileHostCosts& c) {
  nlohmann::json j = nlohmann::json::object();
  if (c.send_cpu_us) {
    j["send_cpu_us"] = *c.send_cpu_us;
    j["send_cpu_gbps"] = c.send_cpu_gbps;
  }
  if (!c.action_overhead_us.empty()) {
    nlohmann::json table = nlohmann::json::object();
    for (const auto& [size, us] : c.action_overhead_us) table[std::to_string(size)] = us;
    j["action_overhead_us"] = table;
  }
  return j;
}

ProfileHostCosts host_costs_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("host_costs: must be an object");
  ProfileHostCosts c;
  for (const auto& [key, value] : j.items()) {
    const std::string path = "host_costs." + key;
    if (key == "send_cpu_us") {
      c.send_cpu_us = non_negative(value, path);
    } else if (key == "send_cpu_gbps") {
      c.send_cpu_gbps = non_negative(value, path);
    } else if (key == "action_overhead_us") {
      if (!value.is_object() || value.empty())
        throw std::runtime_error(path + ": must be an object of microbatch size to microseconds, e.g. {\"4\": 120}");
      for (const auto& [size, us] : value.items()) {
        int b = 0;
        std::size_t used = 0;
        try {
          b = std::stoi(size, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != size.size() || b < 1) throw std::runtime_error(path + ": \"" + size + "\" is not a microbatch size >= 1");
        c.action_overhead_us.emplace_back(b, non_negative(us, path + "." + size));
      }
      // JSON objects keep no order; the table is read by size (action_overhead_at).
      std::sort(c.action_overhead_us.begin(), c.action_overhead_us.end());
    } else {
      throw std::runtime_error(path + ": unknown member (send_cpu_us, send_cpu_gbps, action_overhead_us)");
    }
  }
  if (j.contains("send_cpu_gbps") && !c.send_cpu_us)
    throw std::runtime_error("host_costs.send_cpu_gbps: given without send_cpu_us");
  return c;
}

}  // namespace pw

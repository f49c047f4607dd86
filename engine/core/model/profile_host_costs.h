#pragma once
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pw {

// The host costs `pipewright profile --in-situ` fitted on the machine that
// ran the engine (core/calibrate/host_costs.h): what a send holds its sender
// and the host time a stage spends around each action, by microbatch size.
// They describe the host and its transport, not the model, but they were
// measured with this profile's compute and only plan right beside it, so
// they travel in the profile file ("host_costs") and a job that plans with
// the profile takes them unless it sets the cluster fields itself
// (core/job/profile_host_costs.h).
struct ProfileHostCosts {
  std::optional<double> send_cpu_us;
  double send_cpu_gbps = 0;
  std::vector<std::pair<int, double>> action_overhead_us;  // (microbatch size, us), ascending sizes

  bool empty() const { return !send_cpu_us && action_overhead_us.empty(); }
};

// {"send_cpu_us", "send_cpu_gbps", "action_overhead_us": {"SIZE": us, ...}}.
nlohmann::json host_costs_to_json(const ProfileHostCosts& c);
// Throws std::runtime_error naming the member ("host_costs.send_cpu_us: ...").
ProfileHostCosts host_costs_from_json(const nlohmann::json& j);

}  // namespace pw

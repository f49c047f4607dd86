#include "core/calibrate/host_costs.h"

#include "core/calibrate/overhead_closure.h"
#include "core/plan/microbatch_search.h"

namespace pw {

void SizeRuns::add(std::vector<Event> run_events, double run_iteration_ms) {
  compute.push_back(measure_stage_compute(run_events));
  events.push_back(std::move(run_events));
  iteration_ms.push_back(run_iteration_ms);
}

double SizeRuns::mean_ms() const {
  double sum = 0;
  for (double ms : iteration_ms) sum += ms;
  return iteration_ms.empty() ? 0 : sum / static_cast<double>(iteration_ms.size());
}

HostCosts fit_host_costs(const JobSpec& job, const std::map<int, SizeRuns>& runs) {
  HostCosts out;
  std::vector<Event> all;
  for (const auto& [b, r] : runs)
    for (const auto& e : r.events) all.insert(all.end(), e.begin(), e.end());
  JobSpec costs = job;
  out.send = fit_send_cost(all);
  if (out.send) {
    costs.cluster.device.send_cpu_us = out.send->per_message_us;
    costs.cluster.device.send_cpu_gbps = out.send->gbps;
  }
  for (const auto& [b, r] : runs) {
    if (r.events.empty()) continue;
    JobSpec at = costs;
    resolve_auto_microbatch(at, b);
    HostTimeAtSize h;
    h.microbatch = b;
    h.counted = fit_action_overhead_us(r.events);
    if (auto closed = close_action_overhead_us(at, r.plan, r.mean_ms())) {
      h.us = *closed;
      h.closed = true;
    } else if (h.counted) {
      h.us = *h.counted;
    } else {
      continue;
    }
    out.per_action.push_back(h);
  }
  return out;
}

void apply_host_costs(JobSpec& job, const HostCosts& costs) {
  auto& cluster = job.raw["cluster"];
  if (costs.send) {
    job.cluster.device.send_cpu_us = costs.send->per_message_us;
    job.cluster.device.send_cpu_gbps = costs.send->gbps;
    cluster["send_cpu_us"] = costs.send->per_message_us;
    cluster["send_cpu_gbps"] = costs.send->gbps;
  }
  if (costs.per_action.empty()) return;
  job.cluster.device.action_overhead_by_microbatch.clear();
  nlohmann::json table = nlohmann::json::object();
  for (const auto& h : costs.per_action) {
    job.cluster.device.action_overhead_by_microbatch.emplace_back(h.microbatch, h.us);
    table[std::to_string(h.microbatch)] = h.us;
  }
  job.cluster.device.action_overhead_us = action_overhead_at(job.cluster.device, job.training.microbatch_size);
  cluster["action_overhead_us"] = table;
}

}  // namespace pw

#include "core/job/profile_host_costs.h"

namespace pw {
namespace {

bool job_sets(const JobSpec& job, const char* field) {
  const auto cluster = job.raw.find("cluster");
  return cluster != job.raw.end() && cluster->is_object() && cluster->contains(field);
}

bool measured(const ModelProfile& p) { return !p.source.empty() && p.source != "analytic"; }

}  // namespace

void apply_profile_host_costs(JobSpec& job, ModelProfile& profile) {
  if (!profile.host_costs || profile.host_costs->empty()) return;
  const ProfileHostCosts& c = *profile.host_costs;
  if (!profile.device.empty() && profile.device != job.cluster.device.preset) {
    profile.assumptions.push_back("the profile's host costs (send hold, host time per action) were measured on " +
                                  profile.device + ", not on the job's " + job.cluster.device.preset +
                                  ": not used");
    return;
  }
  nlohmann::json& cluster = job.raw["cluster"];
  if (c.send_cpu_us && !job_sets(job, "send_cpu_us") && !job_sets(job, "send_cpu_gbps")) {
    job.cluster.device.send_cpu_us = *c.send_cpu_us;
    job.cluster.device.send_cpu_gbps = c.send_cpu_gbps;
    cluster["send_cpu_us"] = *c.send_cpu_us;
    cluster["send_cpu_gbps"] = c.send_cpu_gbps;
  }
  if (!c.action_overhead_us.empty() && !job_sets(job, "action_overhead_us")) {
    job.cluster.device.action_overhead_by_microbatch = c.action_overhead_us;
    job.cluster.device.action_overhead_us = action_overhead_at(job.cluster.device, job.training.microbatch_size);
    nlohmann::json table = nlohmann::json::object();
    for (const auto& [size, us] : c.action_overhead_us) table[std::to_string(size)] = us;
    cluster["action_overhead_us"] = table;
  }
}

bool has_host_costs(const JobSpec& job) {
  const DeviceSpec& d = job.cluster.device;
  return d.send_cpu_us > 0 || d.send_cpu_gbps > 0 || d.action_overhead_us > 0 || !d.action_overhead_by_microbatch.empty();
}

std::optional<std::string> missing_host_costs_note(const JobSpec& job, const ModelProfile& profile) {
  if (!measured(profile) || has_host_costs(job)) return std::nullopt;
  return std::string("the measured profile carries no host costs (send hold, host time per action; `pipewright "
                     "profile --in-situ` stores them in the profile): the microbatch size and the advice weigh "
                     "compute and transfers alone, which favours small microbatches");
}

}  // namespace pw

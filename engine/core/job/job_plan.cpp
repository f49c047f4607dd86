#include "core/job/job_plan.h"

#include "core/cluster/topology.h"
#include "core/model/analytic_profile.h"
#include "core/job/profile_host_costs.h"
#include "core/model/graph_order.h"
#include "core/model/profile_io.h"
#include "core/model/profile_retarget.h"
#include "core/plan/iteration_bound.h"
#include "core/plan/microbatch_search.h"
#include "core/plan/parallel_search.h"
#include "core/plan/plan_order.h"

#include <cmath>
#include <limits>
#include <map>
#include "core/spec/spec_error.h"

namespace pw {
namespace {

// What only the layer count tells: each stage (and chunk) needs a layer,
// and scripted migrations name layers.
void check_profile_fits(const JobSpec& job, const ModelProfile& p) {
  int parts = job.pipeline.stages * job.pipeline.chunks;
  if (static_cast<int>(p.size()) < parts)
    throw SpecError("pipeline.stages", "stages x chunks (" + std::to_string(parts) + ") must be <= the model's " +
                                           std::to_string(p.size()) + " layers");
  check_runtime_layers(job.runtime, static_cast<int>(p.size()));
}

// parallel.tensor = t > 1 with a measured profile: its attention and FFN
// blocks priced as shards (split_measured_layer), the rest whole, and a
// note saying which figures are measured and which modelled.
void split_measured_profile(const JobSpec& job, ModelProfile& p) {
  const std::string t = std::to_string(job.parallel.tensor);
  int split = 0;
  for (LayerProfile& l : p.layers)
    if (tensor_splits_measured(l)) {
      split_measured_layer(job, l);
      ++split;
    }
  if (split == 0) {
    p.assumptions.push_back("parallel.tensor = " + t + " with a measured profile: none of its layers is an attention "
                            "or FFN block, so all are costed whole, as measured");
    return;
  }
  p.assumptions.push_back(
      "parallel.tensor = " + t + " with a measured profile: measured (t = 1) are each layer's times and memory; "
      "modelled are the " + std::to_string(split) + " attention / FFN blocks' split (each phase's time above its "
      "dispatches divided by " + t + ", as the analytic profile splits its blocks) and their all-reduces (one [s, b, h] "
      "activation each way per block over the intra-node link); the other " + std::to_string(p.size() - split) +
      " layers (embedding, head, ...) and all memory are costed whole, as measured (memory an upper bound)");
}

}  // namespace

ModelProfile job_profile(const JobSpec& job) {
  if (job.model.profile.empty() && job.model.kind == "torchscript")
    throw SpecError("model.profile", "a TorchScript model has no analytic costs: measure them first with "
                                     "`pipewright profile JOB -o profile.json` and set model.profile (or pass "
                                     "--profile FILE); `pipewright run` profiles by itself");
  ModelProfile p;
  if (job.model.profile.empty()) {
    p = analytic_profile(job);
    check_profile_fits(job, p);
    return p;
  }
  try {
    p = load_profile_file(job.model.profile, job.training.microbatch_size);
  } catch (const std::runtime_error& e) {
    // The file's own reader names the file and line; the job names the field.
    throw SpecError("model.profile", e.what());
  }
  check_profile_fits(job, p);
  // Measured elsewhere: re-target to the job's device (profile_retarget.h).
  std::string measured = job.model.profile_device.empty() ? p.device : job.model.profile_device;
  const DeviceSpec& to = job.cluster.device;
  auto from = device_preset(measured);
  if (measured.empty())
    p.assumptions.push_back("device the profile was measured on is unknown (set model.profile_device): "
                            "costs used as measured on " + to.preset);
  else if (!from)
    p.assumptions.push_back("profile device \"" + measured + "\" is not a preset: costs used as measured");
  else if (from->tflops != to.tflops || from->mem_bandwidth_gbs != to.mem_bandwidth_gbs)
    p = retarget_profile(p, *from, to);
  // Measured at t = 1 (whole layers, no tensor all-reduces): on the job's
  // device, the blocks split as the analytic profile splits its own.
  if (job.parallel.tensor > 1) split_measured_profile(job, p);
  // A branching graph is laid out for this job's stage count, so that
  // contiguous stages can cut it wherever PipeDream's optimizer could.
  return order_for_stages(p, job.pipeline.stages * job.pipeline.chunks);
}

Topology topology_of(const ClusterSpec& c) {
  Topology t;
  t.gpus_per_node = std::max(1, c.gpus_per_node);
  t.link_gbps = c.device.link_gbps;
  t.link_latency_us = c.device.link_latency_us;
  t.node_link_gbps = c.node_link_gbps > 0 ? c.node_link_gbps : c.device.link_gbps;
  t.node_link_latency_us = c.node_link_gbps > 0 ? c.node_link_latency_us : c.device.link_latency_us;
  t.devices = c.devices;
  return t;
}

GradientSync gradient_sync(const JobSpec& job) {
  GradientSync g;
  g.replicas = job.parallel.data;
  g.tensor = job.parallel.tensor;
  g.bucket_bytes = static_cast<std::uint64_t>(job.parallel.bucket_mb * 1024 * 1024);
  g.has_topology = true;
  g.topology = topology_of(job.cluster);
  return g;
}

PlanRequest plan_request(const JobSpec& job, const ModelProfile& profile) {
  PlanRequest r;
  r.sync = gradient_sync(job);
  r.profile = &profile;
  r.device = job.cluster.device;
  r.schedule = job.pipeline.schedule;
  r.stages = job.pipeline.stages;
  r.microbatches = job.pipeline.microbatches;
  r.chunks = job.pipeline.chunks;
  r.auto_schedule = job.pipeline.schedule_auto;
  r.microbatch_size = job.training.microbatch_size;
  r.iteration_cost = iteration_cost_of(job);
  r.memory_cap = job.pipeline.memory_cap;
  return r;
}

IterationCost iteration_cost_of(const JobSpec& job) {
  // Both reduce the whole pipeline's gradient at every step (docs/engine.md):
  // no device starts the next iteration before every device's last W.
  return job.training.clip_grad_norm > 0 || job.training.skip_nonfinite ? IterationCost::Span : IterationCost::Window;
}

SimInput PreparedJob::sim_input() const {
  SimInput in;
  in.profile = &profile;
  in.plan = &plan;
  in.schedule = schedule.get();
  in.device = job.cluster.device;
  in.microbatch_size = job.training.microbatch_size;
  in.sync = gradient_sync(job);
  in.iteration_cost = iteration_cost_of(job);
  return in;
}

void resolve_auto_schedule(JobSpec& job, const Plan& plan) {
  if (!job.pipeline.schedule_auto) return;
  job.pipeline.schedule = schedule_kind_from_string(plan.schedule).value_or(ScheduleKind::OneFOneB);
  job.pipeline.chunks = static_cast<int>(plan.stages.size()) / job.pipeline.stages;
  job.pipeline.schedule_auto = false;
}

namespace {

// The job planned at one (stages, replicas) split: its microbatch size
// searched under "auto", else planned as given. `p.job` comes back resolved.
void plan_one_split(PreparedJob& p, const std::string& name, double effort) {
  const JobSpec& job = p.job;
  if (job.training.microbatch_size_auto) {
    // Every size is planned with its own profile (the costs per size);
    // each size gets an equal share of the planner's search budget.
    std::map<int, ModelProfile> profiles;
    const double share = effort / static_cast<double>(std::max<std::size_t>(1, microbatch_candidates(job).size()));
    auto profile_at = [&](const JobSpec& at) -> const ModelProfile& {
      auto it = profiles.find(at.training.microbatch_size);
      if (it == profiles.end()) it = profiles.emplace(at.training.microbatch_size, job_profile(at)).first;
      return it->second;
    };
    p.plan = search_microbatch(
        p.job,
        [&](const JobSpec& at) {
          PlanRequest req = plan_request(at, profile_at(at));
          req.search_effort = share;
          return run_planner(name, req);
        },
        [&](const JobSpec& at) {
          // A size whose profile cannot be made is planned, to report why.
          try {
            return iteration_lower_bound_ms(plan_request(at, profile_at(at)));
          } catch (const std::exception&) {
            return 0.0;
          }
        });
    p.profile = std::move(profiles.at(p.job.training.microbatch_size));
  } else {
    p.profile = job_profile(job);
    PlanRequest req = plan_request(p.job, p.profile);
    req.search_effort = effort;
    p.plan = run_planner(name, req);
    p.plan.microbatch_size = job.training.microbatch_size;
  }
}

// A lower bound on any plan of a job resolved to one split: under a
// microbatch size "auto", the least over the sizes it would try.
double split_lower_bound(const JobSpec& at) {
  if (!at.training.microbatch_size_auto) {
    ModelProfile profile = job_profile(at);
    return iteration_lower_bound_ms(plan_request(at, profile));
  }
  double best = std::numeric_limits<double>::infinity();
  const std::vector<int> sizes = microbatch_candidates(at);
  for (int b : sizes) {
    JobSpec sized = at;
    resolve_auto_microbatch(sized, b);
    ModelProfile profile = job_profile(sized);
    best = std::min(best, iteration_lower_bound_ms(plan_request(sized, profile)));
  }
  // Infinite where no size fits the weights (iteration_bound.h): pruned
  // once a feasible split is found. No size at all: planned, to say why.
  return sizes.empty() ? 0.0 : best;
}

}  // namespace

PreparedJob prepare_job(const JobSpec& job, const std::string& planner) {
  PreparedJob p;
  p.job = job;
  // A calibrated profile's host costs plan with it (profile_host_costs.h);
  // what taking them said is kept for the profile the plan ends with.
  std::vector<std::string> host_notes;
  if (!job.model.profile.empty()) {
    ModelProfile measured = job_profile(job);
    const std::size_t before = measured.assumptions.size();
    apply_profile_host_costs(p.job, measured);
    host_notes.assign(measured.assumptions.begin() + static_cast<std::ptrdiff_t>(before), measured.assumptions.end());
  }
  const std::string name = planner.empty() ? job.pipeline.planner : planner;
  if (job.parallel_searched()) {
    // Every split gets a share of the planner's budget, as sizes do.
    const int layers = static_cast<int>(job_profile(job).size());
    const double effort = 1.0 / static_cast<double>(std::max<std::size_t>(1, parallel_splits(job, layers).size()));
    p.plan = search_parallel(
        p.job, layers,
        [&](JobSpec& at) {
          PreparedJob one;
          one.job = at;
          plan_one_split(one, name, effort);
          at = one.job;  // resolved to the size chosen, where that was "auto"
          return one.plan;
        },
        split_lower_bound);
    // The winner's own profile (a branching graph is ordered per stage count).
    p.profile = job_profile(p.job);
  } else {
    plan_one_split(p, name, 1.0);
  }
  p.profile.assumptions.insert(p.profile.assumptions.end(), host_notes.begin(), host_notes.end());
  if (job.training.microbatch_size_auto)
    if (auto note = missing_host_costs_note(p.job, p.profile)) p.profile.assumptions.push_back(*note);
  resolve_auto_schedule(p.job, p.plan);
  p.schedule = make_plan_schedule(p.job.pipeline.schedule, p.job.pipeline.stages, p.job.pipeline.microbatches,
                                  p.job.pipeline.chunks, p.plan);
  return p;
}

}  // namespace pw

// Properties of any valid job's simulation (rapidcheck): the job is drawn at
// random, parsed by the core like a user's file, planned and simulated.
// Each figure is held to a bound worked out here from the profile, the plan
// and the schedule's placement, not from the simulator's own definitions
// (the fractions it reports are clamped to [0, 1], which would hide a
// violation): per device its compute, its static memory, one microbatch's
// path through the pipeline. The idle-time attribution of the run's events
// must find the same compute on every schedule, split backward included.
#include <gtest/gtest.h>

#include <cmath>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "core/analysis/idle_attribution.h"
#include "core/analysis/steps_per_iteration.h"
#include "core/cost/stage_cost.h"
#include "core/job/job_plan.h"
#include "core/plan/planner.h"
#include "core/sim/simulator.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

// A job document; shown as its JSON when a property fails.
struct JobDoc {
  nlohmann::json doc;
};
void showValue(const JobDoc& j, std::ostream& os) { os << j.doc.dump(); }

// A valid job document: a uniform or small BERT model, any schedule the
// shape allows, any planner, a memory budget from tight to ample.
rc::Gen<JobDoc> valid_job() {
  return rc::gen::exec([] {
    const bool bert = *rc::gen::arbitrary<bool>();
    int layers = *rc::gen::inRange(1, 17);
    nlohmann::json model;
    int model_layers;
    if (bert) {
      int heads = *rc::gen::element(1, 2, 4);
      model = {{"kind", "bert"}, {"layers", layers}, {"hidden", heads * *rc::gen::element(16, 32, 64)},
               {"heads", heads}, {"seq_len", *rc::gen::inRange(1, 129)}, {"vocab", *rc::gen::inRange(2, 5000)},
               {"precision", *rc::gen::element<std::string>("fp16", "fp32")}};
      model_layers = 2 * layers + 2;  // embedding, attention + FFN per layer, head
    } else {
      model = {{"kind", "uniform"}, {"layers", layers}, {"fwd_ms", *rc::gen::inRange(1, 400) / 100.0},
               {"bwd_ms", *rc::gen::inRange(1, 800) / 100.0}, {"activation_mb", *rc::gen::inRange(0, 2000) / 10.0},
               {"param_mb", *rc::gen::inRange(0, 500) / 10.0}, {"output_mb", *rc::gen::inRange(0, 100) / 10.0},
               {"optimizer_ms", *rc::gen::inRange(0, 50) / 100.0}};
      model_layers = layers;
    }
    std::string schedule = *rc::gen::element<std::string>("gpipe", "1f1b", "pipedream", "interleaved", "zb-h1", "zb-h2",
                                                          "zb-v", "dualpipe-v", "generated");
    if ((schedule == "zb-v" || schedule == "dualpipe-v") && model_layers < 2) schedule = "zb-h1";  // a V needs two
    const bool v_shape = schedule == "zb-v" || schedule == "dualpipe-v";
    int chunks = schedule == "interleaved" ? *rc::gen::inRange(1, std::min(4, model_layers) + 1) : v_shape ? 2 : 1;
    int stages = *rc::gen::inRange(1, std::min(8, model_layers / chunks) + 1);
    int microbatches = *rc::gen::inRange(1, 17);
    if (schedule == "interleaved") microbatches = stages * *rc::gen::inRange(1, 5);
    if (schedule == "dualpipe-v") microbatches = std::max(microbatches, 2 * stages);
    int mb_size = *rc::gen::inRange(1, 9);
    std::string planner = *rc::gen::elementOf(planner_names());
    // Exact plans one chunk per device or a V's two, PipeDream's planner one.
    if (chunks > 1 && (planner == "pipedream" || (planner == "exact" && !v_shape))) planner = "vpipe";
    return JobDoc{nlohmann::json{
        {"name", "prop"},
        {"model", model},
        {"training", {{"batch_size", microbatches * mb_size}, {"microbatch_size", mb_size},
                      {"optimizer", *rc::gen::element<std::string>("sgd", "momentum", "adam")}}},
        {"cluster", {{"devices", stages + *rc::gen::inRange(0, 3)}, {"device", *rc::gen::element<std::string>("rtx2080ti", "v100-32g", "cpu")},
                     {"memory_gb", *rc::gen::inRange(1, 400) / 10.0}}},
        {"pipeline", {{"stages", stages}, {"schedule", schedule}, {"chunks", chunks},
                      {"planner", planner}}}}};
  });
}

struct Collect : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

// What the profile says device d computes per iteration (forward and full
// backward of each microbatch through each of its virtual stages, a share
// of it where the stage has workers of its own: Plan::stage_share) and
// holds whatever runs (weights, their gradients, the optimizer's state).
struct DeviceBound {
  double compute_ms = 0;
  double optimizer_ms = 0;
  std::uint64_t static_bytes = 0;
};
std::vector<DeviceBound> device_bounds(const PreparedJob& p) {
  const Schedule& s = *p.schedule;
  std::vector<DeviceBound> out(s.devices());
  for (int d = 0; d < s.devices(); ++d)
    for (int c = 0; c < s.chunks(); ++c) {
      const int v = s.virtual_stage(d, c);
      const StageRange& r = p.plan.stages[v];
      for (int l = r.first_layer; l <= r.last_layer; ++l) {
        const LayerProfile& L = p.profile.layers[l];
        out[d].compute_ms += s.microbatches() * (L.fwd_ms + L.bwd_ms) / p.plan.stage_share(v);
        out[d].optimizer_ms += L.optimizer_ms;
        out[d].static_bytes += 2 * L.param_bytes + L.optimizer_bytes;
      }
    }
  return out;
}

RC_GTEST_PROP(SimProperties, AnyValidJobKeepsTheInvariants, ()) {
  nlohmann::json doc = (*valid_job()).doc;
  JobSpec job = parse_job(doc);  // valid by construction: a refusal is a failure
  PreparedJob p;
  try {
    p = prepare_job(job);
  } catch (const SpecError& e) {
    // The one refusal the parser cannot foresee: the exact planner's search
    // would be too large for this profile.
    RC_ASSERT(e.path() == "pipeline.planner");
    RC_DISCARD("exact planner over its size limit");
  }
  Collect events;
  SimResult r = simulate(p.sim_input(), &events);
  const Schedule& sched = *p.schedule;
  RC_ASSERT(static_cast<int>(r.stages.size()) == sched.devices());
  RC_ASSERT(r.iteration_time_ms > 0);
  // The simulator works in whole nanoseconds: a rounding per virtual stage and action.
  const double eps = 1e-9 * r.iteration_time_ms + 1e-6 * sched.microbatches() * sched.chunks() * 4;
  const auto bound = device_bounds(p);
  double busy = 0;
  for (int d = 0; d < sched.devices(); ++d) {
    const SimStage& s = r.stages[d];
    // A device is busy at least with its compute and its step, at most the whole iteration.
    RC_ASSERT(s.busy_ms + eps >= bound[d].compute_ms + bound[d].optimizer_ms);
    RC_ASSERT(s.busy_ms <= r.iteration_time_ms + eps);
    busy += s.busy_ms;
    // Its weights, gradients and optimizer state are resident whatever the policy:
    // a budget below them is out of memory.
    RC_ASSERT(s.peak_memory_bytes >= bound[d].static_bytes);
    if (bound[d].static_bytes > s.memory_budget_bytes) RC_ASSERT(!r.feasible);
  }
  // The devices cannot be busier than all of them all the time (the bubble,
  // unclamped, is not negative).
  RC_ASSERT(busy <= r.stages.size() * r.iteration_time_ms + eps);
  // A flushing iteration holds one microbatch's whole path: every virtual
  // stage's forward, then every backward that passes the gradient on (a
  // split one's B), then the first stage's W.
  if (sched.flushes()) {
    const bool split = splits_backward(sched.kind());
    double path = 0;
    for (int v = 0; v < static_cast<int>(p.plan.stages.size()); ++v)
      for (int l = p.plan.stages[v].first_layer; l <= p.plan.stages[v].last_layer; ++l) {
        const LayerProfile& L = p.profile.layers[l];
        path += (L.fwd_ms + L.bwd_ms - (split && v > 0 ? weight_grad_ms(L) : 0)) / p.plan.stage_share(v);
      }
    RC_ASSERT(r.iteration_time_ms + eps >= path);
  }
  // Infeasible names a stage whose peak is over its budget.
  if (!r.feasible && r.oom_stage >= 0)
    RC_ASSERT(r.stages[r.oom_stage].peak_memory_bytes > r.stages[r.oom_stage].memory_budget_bytes);
  // The attribution finds each device's compute (a split backward's B and
  // W included) per iteration, and its causes fill the rest of the wall.
  AttributionOptions ao;
  ao.optimizer_steps_per_iteration = optimizer_steps_per_iteration(sched.kind(), sched.microbatches());
  ao.keep_intervals = false;
  Attribution a = attribute_idle(events.events, ao);
  RC_ASSERT(a.iterations >= 1);
  std::vector<double> compute_ms(sched.devices(), 0);
  for (const auto& it : a.stage_iterations) {
    std::int64_t sum = it.compute_ns;
    for (auto c : it.cause_ns) sum += c;
    RC_ASSERT(sum == it.wall_ns());
    compute_ms[it.stage] += it.compute_ns / 1e6 / a.iterations;
  }
  for (int d = 0; d < sched.devices(); ++d) RC_ASSERT(std::abs(compute_ms[d] - bound[d].compute_ms) <= eps);
}

}  // namespace
}  // namespace pw

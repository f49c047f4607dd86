// Properties of any valid job's simulation (rapidcheck): the job is drawn at
// random, parsed by the core like a user's file, planned and simulated.
// The simulator reports bubble and busy fractions clamped to [0, 1], which
// would hide a violation, so the properties are checked on the raw figures.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

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
    std::string schedule = *rc::gen::element<std::string>("gpipe", "1f1b", "pipedream", "interleaved", "generated");
    int chunks = schedule == "interleaved" ? *rc::gen::inRange(1, std::min(4, model_layers) + 1) : 1;
    int stages = *rc::gen::inRange(1, std::min(8, model_layers / chunks) + 1);
    int microbatches = *rc::gen::inRange(1, 17);
    if (schedule == "interleaved") microbatches = stages * *rc::gen::inRange(1, 5);
    int mb_size = *rc::gen::inRange(1, 9);
    std::string planner = *rc::gen::elementOf(planner_names());
    if (chunks > 1 && (planner == "exact" || planner == "pipedream")) planner = "vpipe";  // one chunk per device
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
  SimResult r = simulate(p.sim_input());
  RC_ASSERT(static_cast<int>(r.stages.size()) == p.schedule->devices());
  RC_ASSERT(r.iteration_time_ms > 0);
  const double eps = 1e-9 * r.iteration_time_ms;
  double busy = 0;
  for (const auto& s : r.stages) {
    // busy <= 1: a device computes at most the whole iteration.
    RC_ASSERT(s.busy_ms <= r.iteration_time_ms + eps);
    busy += s.busy_ms;
    // peak <= budget when feasible.
    if (r.feasible) RC_ASSERT(s.peak_memory_bytes <= s.memory_budget_bytes);
  }
  // bubble >= 0: the devices cannot be busier than all of them all the time.
  RC_ASSERT(busy <= r.stages.size() * r.iteration_time_ms + eps);
  RC_ASSERT(r.bubble_fraction >= 0.0);
  RC_ASSERT(r.bubble_fraction <= 1.0);
  // Infeasible names the stage that ran out of memory, and it did.
  if (!r.feasible && r.oom_stage >= 0)
    RC_ASSERT(r.stages[r.oom_stage].peak_memory_bytes > r.stages[r.oom_stage].memory_budget_bytes);
}

}  // namespace
}  // namespace pw

// Cases the property tests (tests/core/property) found, kept as plain tests
// with their figures checked against sums taken from the profile.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/job/job_plan.h"
#include "core/sim/simulator.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

using namespace pw;

// PipeDream (no flush), one microbatch, the heavier stage last: two
// simulated iterations measured at stage 0 gave a period shorter than the
// last stage's own work per iteration (busy fraction clamped to 1 hid it).
TEST(SimRegressions, AsyncPeriodIsAtLeastTheBusiestStagesWork) {
  JobSpec job = job_from_text(R"({"name": "prop", "model": {"kind": "bert", "layers": 1, "hidden": 128, "heads": 4,
      "seq_len": 1, "vocab": 525, "precision": "fp16"}, "cluster": {"device": "cpu", "devices": 2, "memory_gb": 0.1},
      "training": {"batch_size": 1, "microbatch_size": 1, "optimizer": "sgd"},
      "pipeline": {"stages": 2, "schedule": "pipedream", "planner": "gpipe"}})", ".");
  PreparedJob p = prepare_job(job);
  SimResult r = simulate(p.sim_input());
  double busiest = 0;
  for (const auto& st : p.plan.stages) {
    // One microbatch: a forward, a backward and the optimizer step of each
    // layer, and one more forward where the plan recomputes.
    double work = 0;
    for (int l = st.first_layer; l <= st.last_layer; ++l) {
      const auto& L = p.profile.layers[l];
      work += L.fwd_ms + L.bwd_ms + L.optimizer_ms + (p.plan.policy[l] == MemoryPolicy::Recompute ? L.fwd_ms : 0);
    }
    busiest = std::max(busiest, work);
  }
  EXPECT_GE(r.iteration_time_ms, busiest - 1e-5);  // the simulator counts whole nanoseconds per action (was 2 us short)
  for (const auto& s : r.stages) EXPECT_LE(s.busy_ms, r.iteration_time_ms * (1 + 1e-9));
}

// interleaved chunks with a planner that plans one chunk per device: the
// job is refused on load (it was accepted, then `plan` ended in a bare
// std::invalid_argument).
TEST(SimRegressions, ChunksThePlannerCannotPlanAreRefusedOnLoad) {
  const std::string text = R"({"name": "c", "model": {"kind": "uniform", "layers": 4, "fwd_ms": 1, "bwd_ms": 2,
      "activation_mb": 1}, "cluster": {"device": "cpu", "devices": 2}, "training": {"batch_size": 2},
      "pipeline": {"stages": 2, "schedule": "interleaved", "chunks": 2, "planner": "PLANNER"}})";
  for (std::string planner : {"exact", "pipedream"}) {
    std::string t = text;
    t.replace(t.find("PLANNER"), 7, planner);
    try {
      job_from_text(t, ".");
      FAIL() << planner;
    } catch (const SpecError& e) {
      EXPECT_EQ(e.path(), "pipeline.chunks") << planner;
    }
  }
  std::string ok = text;
  ok.replace(ok.find("PLANNER"), 7, "vpipe");
  EXPECT_NO_THROW(prepare_job(job_from_text(ok, ".")));
  // A V's two chunks: exact plans them, PipeDream's planner does not (the
  // property generator found zb-v with it accepted, then refused by `plan`).
  std::string v = text;
  v.replace(v.find("interleaved"), 11, "zb-v");
  std::string exact = v, pipedream = v;
  exact.replace(exact.find("PLANNER"), 7, "exact");
  pipedream.replace(pipedream.find("PLANNER"), 7, "pipedream");
  EXPECT_NO_THROW(prepare_job(job_from_text(exact, ".")));
  try {
    job_from_text(pipedream, ".");
    FAIL() << "zb-v with planner pipedream";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "pipeline.chunks");
  }
}

#pragma once
// A job simulated and recorded as `pipewright simulate JOB --db` records it
// (cmd_simulate.cpp): its job, profile and plan, every event and memory
// sample, the iteration's throughput and the summary's status. `slow`
// stretches the recorded clock: a run the model under-predicted by that
// factor, whose explain withholds the advice within that error.
#include <nlohmann/json.hpp>
#include <string>

#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "core/spec/job_spec.h"
#include "db/run_writer.h"

namespace pw::gui::test {

struct Stretch : EventSink {
  EventSink* out;
  double slow;
  std::int64_t last_end = 0;
  Stretch(EventSink* o, double s) : out(o), slow(s) {}
  std::int64_t t(std::int64_t ns) const { return static_cast<std::int64_t>(static_cast<double>(ns) * slow); }
  void on_event(const Event& e) override {
    Event x = e;
    x.start_ns = t(e.start_ns);
    x.end_ns = t(e.end_ns);
    last_end = std::max(last_end, x.end_ns);
    out->on_event(x);
  }
  void on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) override { out->on_memory(stage, t(t_ns), bytes); }
};

inline SimResult record_simulated(const std::string& path, const nlohmann::json& doc, double slow = 1.0) {
  PreparedJob p = prepare_job(parse_job(doc));
  db::RunWriter w(path, {.name = p.job.name, .source = "simulate", .stages = p.job.pipeline.stages});
  w.job(doc);
  w.profile(profile_to_json(p.profile));
  w.plan(1, 0, "initial", to_json(p.plan));
  Stretch s(&w, slow);
  SimResult r = simulate(p.sim_input(), &s);
  w.throughput({s.last_end, 1, r.throughput_samples_per_s / slow, r.iteration_time_ms * slow});
  w.finish(RunStatus::Finished);
  return r;
}

}  // namespace pw::gui::test

#include "core/analysis/suggestions.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/job/job_plan.h"
#include "core/job/profile_host_costs.h"
#include "core/plan/planner_registry.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/job_spec.h"

namespace pw {
namespace {

struct Outcome {
  double iteration_ms = 0, bubble = 0;
  std::uint64_t peak = 0, budget = 0;
  bool feasible = false;
  Plan plan;
  std::vector<std::string> caveats;
};

Outcome simulate_job(const nlohmann::json& doc, const std::vector<std::string>& overrides) {
  nlohmann::json d = doc;
  for (const auto& o : overrides) apply_override(d, o);
  PreparedJob p = prepare_job(parse_job(d));
  SimResult r = simulate(p.sim_input());
  Outcome o;
  o.iteration_ms = r.iteration_time_ms;
  o.bubble = r.bubble_fraction;
  o.feasible = r.feasible;
  for (const auto& s : r.stages) o.peak = std::max(o.peak, s.peak_memory_bytes), o.budget = s.memory_budget_bytes;
  o.plan = p.plan;
  if (auto note = missing_host_costs_note(p.job, p.profile)) o.caveats.push_back(*note);
  return o;
}

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * f);
  return buf;
}

// 12.5 -> "12.5", 50 -> "50": as a user would write it in --set.
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string range_text(int a, int b) { return a == b ? "layer " + std::to_string(a) : "layers " + std::to_string(a) + "-" + std::to_string(b); }

}  // namespace

std::string describe_plan_change(const Plan& from, const Plan& to) {
  auto owners = [](const Plan& plan) {
    std::vector<int> owner(plan.policy.size(), -1);
    for (std::size_t s = 0; s < plan.stages.size(); ++s)
      for (int l = plan.stages[s].first_layer; l <= plan.stages[s].last_layer && l < static_cast<int>(owner.size()); ++l)
        owner[l] = static_cast<int>(s);
    return owner;
  };
  std::vector<std::string> parts;
  // Runs of layers whose (before, after) pair is the same, where it changed.
  auto runs = [&](auto before, auto after, std::size_t n, auto text) {
    for (std::size_t l = 0; l < n;) {
      if (before(l) == after(l)) {
        ++l;
        continue;
      }
      std::size_t e = l;
      while (e + 1 < n && before(e + 1) == before(l) && after(e + 1) == after(l)) ++e;
      parts.push_back(range_text(static_cast<int>(l), static_cast<int>(e)) + text(l));
      l = e + 1;
    }
  };
  std::vector<int> fo = owners(from), tow = owners(to);
  const std::size_t n = std::min(fo.size(), tow.size());
  runs([&](std::size_t l) { return fo[l]; }, [&](std::size_t l) { return tow[l]; }, n, [&](std::size_t l) {
    return " move from stage " + std::to_string(fo[l]) + " to stage " + std::to_string(tow[l]);
  });
  runs([&](std::size_t l) { return from.policy[l]; }, [&](std::size_t l) { return to.policy[l]; }, n, [&](std::size_t l) {
    return std::string(": ") + to_string(from.policy[l]) + " -> " + to_string(to.policy[l]);
  });
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s.empty() ? "the same plan" : s;
}

SuggestionReport suggest_changes(const nlohmann::json& doc, int max, double model_error) {
  return advise(simulate_suggestions(doc), model_error, max);
}

SuggestionReport advise(SuggestionReport rep, double model_error, int max) {
  withhold_within_error(rep, model_error);
  if (static_cast<int>(rep.suggestions.size()) > max) rep.suggestions.resize(static_cast<std::size_t>(std::max(0, max)));
  return rep;
}

SuggestionReport simulate_suggestions(const nlohmann::json& doc) {
  SuggestionReport rep;
  JobSpec job = parse_job(doc);
  Outcome before = simulate_job(doc, {});
  rep.iteration_ms = before.iteration_ms;
  rep.caveats = before.caveats;

  struct Candidate {
    std::string change, addresses;
    std::vector<std::string> overrides;
    bool describe_plan = false;
  };
  std::vector<Candidate> cands;
  // Smaller microbatches, same batch: more of them shrink fill and drain.
  const int batch = job.training.batch_size;
  const bool explicit_count = doc.contains("pipeline") && doc["pipeline"].contains("microbatches");
  for (int size = job.training.microbatch_size / 2; size >= 1; size /= 2) {
    if (batch % size != 0) continue;
    Candidate c;
    const int m = batch / size;
    c.change = std::to_string(m) + " microbatches of " + std::to_string(size) + " instead of " +
               std::to_string(job.pipeline.microbatches) + " of " + std::to_string(job.training.microbatch_size);
    c.addresses = "fill, drain";
    c.overrides.push_back("training.microbatch_size=" + std::to_string(size));
    if (explicit_count) c.overrides.push_back("pipeline.microbatches=" + std::to_string(m));
    cands.push_back(c);
    if (m >= 8 * job.pipeline.stages) break;  // enough to make the bubble small
  }
  // Other planners: layers moved between stages, other memory policies.
  for (const auto& p : planner_registry()) {
    if (p.name == job.pipeline.planner) continue;
    cands.push_back({"planner " + p.name, "dependency, imbalance, memory policy", {"pipeline.planner=" + p.name}, true});
  }
  if (job.pipeline.schedule == ScheduleKind::GPipe)
    cands.push_back({"1F1B instead of GPipe", "memory (fewer activations in flight)", {"pipeline.schedule=1f1b"}});
  // With replicas, the gradients' all-reduce before each step: buckets of
  // another size (fewer latencies, or an earlier start under the backward),
  // half the replicas over twice the stages (each all-reduce over fewer
  // peers, more microbatches to fill the pipeline), or the planner's split.
  if (job.parallel.data > 1) {
    const std::string sync = "gradient sync";
    for (double f : {0.5, 2.0, 4.0}) {
      const double mb = job.parallel.bucket_mb * f;
      cands.push_back({"gradient buckets of " + number_text(mb) + " MB instead of " + number_text(job.parallel.bucket_mb),
                       sync, {"parallel.bucket_mb=" + number_text(mb)}});
    }
    const int d = job.parallel.data, st = job.pipeline.stages;
    if (d % 2 == 0 && !job.pipeline.stages_auto) {
      Candidate c{std::to_string(d / 2) + " replicas of " + std::to_string(2 * st) + " stages instead of " +
                      std::to_string(d) + " of " + std::to_string(st),
                  sync + ", fill, drain",
                  {"parallel.data=" + std::to_string(d / 2), "pipeline.stages=" + std::to_string(2 * st)}};
      if (explicit_count) c.overrides.push_back("pipeline.microbatches=" + std::to_string(2 * job.pipeline.microbatches));
      cands.push_back(c);
    }
    // "auto" chooses the microbatch count with the split: a count given in
    // the job is refused with it.
    if (!explicit_count)
      cands.push_back({"stages and replicas chosen by the planner", sync + ", fill, drain",
                       {"parallel.data=auto", "pipeline.stages=auto"}, true});
  }

  for (const auto& c : cands) {
    Outcome after;
    try {
      after = simulate_job(doc, c.overrides);
    } catch (const std::exception& e) {
      const std::string why = e.what();
      rep.notes.push_back(why.rfind(c.change + ":", 0) == 0 ? why : c.change + ": " + why);
      continue;
    }
    if (!after.feasible || after.iteration_ms >= before.iteration_ms) continue;
    Suggestion s;
    s.change = c.change;
    if (c.describe_plan) {
      // Another (stages, replicas) split is the change: layers moving
      // between pipelines of different depths would not read as one.
      const int stages = static_cast<int>(after.plan.stages.size());
      if (stages != static_cast<int>(before.plan.stages.size()) || after.plan.data_parallel != before.plan.data_parallel) {
        s.change += ": " + std::to_string(after.plan.data_parallel) + " replicas of " + std::to_string(stages) + " stages";
      } else {
        std::string what = describe_plan_change(before.plan, after.plan);
        if (what == "the same plan") continue;
        s.change += ": " + what;
      }
    }
    s.addresses = c.addresses;
    s.overrides = c.overrides;
    s.iteration_ms_before = before.iteration_ms;
    s.iteration_ms_after = after.iteration_ms;
    s.bubble_before = before.bubble;
    s.bubble_after = after.bubble;
    s.peak_memory_before = before.peak;
    s.peak_memory_after = after.peak;
    s.memory_budget = after.budget;
    rep.suggestions.push_back(s);
  }
  std::stable_sort(rep.suggestions.begin(), rep.suggestions.end(),
                   [](const Suggestion& a, const Suggestion& b) { return a.iteration_ms_after < b.iteration_ms_after; });
  return rep;
}

void withhold_within_error(SuggestionReport& rep, double model_error) {
  rep.model_error = model_error;
  if (model_error < 0) {
    rep.notes.push_back("the model's error on this run is unknown (no recorded plan and profile to compare): "
                        "suggestions are the simulator's, unchecked against the run");
    return;
  }
  std::vector<Suggestion> kept;
  for (auto& s : rep.suggestions) {
    const double gain = 1.0 - s.iteration_ms_after / s.iteration_ms_before;
    // A gain equal to the error is within it (1e-9: the figures' rounding).
    if (gain > model_error + 1e-9) {
      kept.push_back(std::move(s));
      continue;
    }
    ++rep.withheld;
    rep.notes.push_back(s.change + ": withheld, its simulated gain (" + percent(gain) +
                        ") is within the model's error on this run (" + percent(model_error) + ")");
  }
  rep.suggestions = std::move(kept);
}

}  // namespace pw

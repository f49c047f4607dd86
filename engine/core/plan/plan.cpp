#include "core/plan/plan.h"

#include <cmath>
#include <stdexcept>

namespace pw {

Plan uniform_partition(int layers, int stages) {
  Plan p;
  p.planner = "uniform";
  p.policy.assign(layers, MemoryPolicy::Keep);
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    // Spread the remainder over the last stages: the first stages hold the
    // most in-flight activations under 1F1B.
    int n = layers / stages + (s >= stages - layers % stages ? 1 : 0);
    p.stages.push_back({first, first + n - 1});
    first += n;
  }
  return p;
}

nlohmann::json to_json(const Plan& plan) {
  nlohmann::json j;
  j["planner"] = plan.planner;
  j["feasible"] = plan.feasible;
  if (!plan.reason.empty()) j["reason"] = plan.reason;
  j["iteration_time_ms"] = plan.iteration_time_ms;
  j["throughput_samples_per_s"] = plan.throughput_samples_per_s;
  j["planning_time_ms"] = plan.planning_time_ms;
  j["layers_moved"] = plan.layers_moved;
  if (!plan.schedule.empty()) j["schedule"] = plan.schedule;
  if (plan.best_1f1b_ms > 0) {
    j["best_1f1b_iteration_ms"] = plan.best_1f1b_ms;
    j["speedup_over_1f1b"] = plan.iteration_time_ms > 0 ? plan.best_1f1b_ms / plan.iteration_time_ms : 0;
  }
  if (plan.microbatch_size > 0) j["microbatch_size"] = plan.microbatch_size;
  if (!plan.microbatch_search.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& c : plan.microbatch_search) {
      nlohmann::json row{{"microbatch_size", c.microbatch_size}, {"microbatches", c.microbatches},
                         {"iteration_time_ms", c.iteration_time_ms}, {"peak_memory_bytes", c.peak_memory_bytes},
                         {"feasible", c.feasible}};
      if (!c.schedule.empty()) row["schedule"] = c.schedule;
      if (!c.reason.empty()) row["reason"] = c.reason;
      if (c.pruned) row["pruned"] = true;
      // Infinite where nothing fits (iteration_bound.h): JSON has no infinity.
      if (c.lower_bound_ms > 0 && std::isfinite(c.lower_bound_ms)) row["lower_bound_ms"] = c.lower_bound_ms;
      rows.push_back(row);
    }
    j["microbatch_search"] = rows;
  }
  j["parallel"] = {{"tensor", plan.tensor_parallel},
                   {"stages", static_cast<int>(plan.stages.size())},
                   {"data", plan.data_parallel}};
  if (!plan.parallel_search.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& c : plan.parallel_search) {
      nlohmann::json row{{"tensor", c.tensor},
                         {"stages", c.stages},
                         {"data", c.replicas},
                         {"microbatch_size", c.microbatch_size},
                         {"microbatches", c.microbatches},
                         {"iteration_time_ms", c.iteration_time_ms},
                         {"throughput_samples_per_s", c.throughput_samples_per_s},
                         {"sync_exposed_ms", c.sync_exposed_ms},
                         {"peak_memory_bytes", c.peak_memory_bytes},
                         {"feasible", c.feasible}};
      if (!c.schedule.empty()) row["schedule"] = c.schedule;
      if (!c.reason.empty()) row["reason"] = c.reason;
      rows.push_back(row);
    }
    j["parallel_search"] = rows;
  }
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const auto& r = plan.stages[s];
    nlohmann::json st{{"first_layer", r.first_layer}, {"last_layer", r.last_layer}};
    nlohmann::json rec = nlohmann::json::array(), swp = nlohmann::json::array(), sel = nlohmann::json::array();
    for (int l = r.first_layer; l <= r.last_layer; ++l) {
      if (plan.policy[l] == MemoryPolicy::Recompute) rec.push_back(l);
      if (plan.policy[l] == MemoryPolicy::Swap) swp.push_back(l);
      if (plan.policy[l] == MemoryPolicy::Selective) sel.push_back(l);
    }
    st["recompute_layers"] = rec;
    st["swap_layers"] = swp;
    if (!sel.empty()) st["selective_layers"] = sel;  // absent when none, as before selective existed
    st["replicas"] = plan.replicas_of(static_cast<int>(s));
    if (s < plan.predicted.size()) {
      st["time_ms"] = plan.predicted[s].time_ms;
      st["peak_memory_bytes"] = plan.predicted[s].peak_memory_bytes;
      st["memory_budget_bytes"] = plan.predicted[s].memory_budget_bytes;
      if (plan.data_parallel > 1 || !plan.replicas.empty()) {
        st["sync_ms"] = plan.predicted[s].sync_ms;
        st["sync_exposed_ms"] = plan.predicted[s].sync_exposed_ms;
      }
    }
    stages.push_back(st);
  }
  j["stages"] = stages;
  if (plan.generated) {
    const PlanOrder& g = *plan.generated;
    nlohmann::json vs = nlohmann::json::array();
    for (size_t s = 0; s < g.f_ms.size(); ++s)
      vs.push_back({{"f_ms", g.f_ms[s]},
                    {"b_ms", g.b_ms[s]},
                    {"w_ms", g.w_ms[s]},
                    {"released_at_b", g.released_at_b[s]},
                    {"held", s < g.held.size() ? g.held[s] : 1.0}});
    j["generated_order"] = {{"devices", g.devices},        {"microbatches", g.microbatches},
                            {"stages", vs},                {"hop_ms", g.hop_ms},
                            {"memory_limit", g.memory_limit}, {"source", g.source},
                            {"generated_ms", g.generated_ms}, {"unit_order_ms", g.unit_order_ms},
                            {"order", g.order}};
  }
  return j;
}

Plan plan_from_json(const nlohmann::json& j) {
  Plan p;
  p.planner = j.value("planner", "unknown");
  p.feasible = j.value("feasible", true);
  p.reason = j.value("reason", "");
  p.iteration_time_ms = j.value("iteration_time_ms", 0.0);
  p.throughput_samples_per_s = j.value("throughput_samples_per_s", 0.0);
  p.planning_time_ms = j.value("planning_time_ms", 0.0);
  p.layers_moved = j.value("layers_moved", 0);
  p.schedule = j.value("schedule", "");
  p.best_1f1b_ms = j.value("best_1f1b_iteration_ms", 0.0);
  p.microbatch_size = j.value("microbatch_size", 0);
  for (const auto& row : j.value("microbatch_search", nlohmann::json::array())) {
    MicrobatchChoice c;
    c.microbatch_size = row.value("microbatch_size", 0);
    c.microbatches = row.value("microbatches", 0);
    c.iteration_time_ms = row.value("iteration_time_ms", 0.0);
    c.peak_memory_bytes = row.value("peak_memory_bytes", std::uint64_t{0});
    c.feasible = row.value("feasible", false);
    c.schedule = row.value("schedule", "");
    c.reason = row.value("reason", "");
    c.pruned = row.value("pruned", false);
    c.lower_bound_ms = row.value("lower_bound_ms", 0.0);
    p.microbatch_search.push_back(c);
  }
  if (j.contains("parallel") && j["parallel"].is_object()) {
    p.data_parallel = std::max(1, j["parallel"].value("data", 1));
    p.tensor_parallel = std::max(1, j["parallel"].value("tensor", 1));  // absent before tensor parallelism: 1
  }
  for (const auto& row : j.value("parallel_search", nlohmann::json::array())) {
    ParallelChoice c;
    c.tensor = row.value("tensor", 1);
    c.stages = row.value("stages", 0);
    c.replicas = row.value("data", 0);
    c.microbatch_size = row.value("microbatch_size", 0);
    c.microbatches = row.value("microbatches", 0);
    c.iteration_time_ms = row.value("iteration_time_ms", 0.0);
    c.throughput_samples_per_s = row.value("throughput_samples_per_s", 0.0);
    c.sync_exposed_ms = row.value("sync_exposed_ms", 0.0);
    c.peak_memory_bytes = row.value("peak_memory_bytes", std::uint64_t{0});
    c.feasible = row.value("feasible", false);
    c.schedule = row.value("schedule", "");
    c.reason = row.value("reason", "");
    p.parallel_search.push_back(c);
  }
  const auto& stages = j.at("stages");
  int layers = 0;
  bool uneven = false;
  for (const auto& st : stages) layers = std::max(layers, st.at("last_layer").get<int>() + 1);
  p.policy.assign(layers, MemoryPolicy::Keep);
  for (const auto& st : stages) {
    p.stages.push_back({st.at("first_layer").get<int>(), st.at("last_layer").get<int>()});
    for (const auto& l : st.value("recompute_layers", nlohmann::json::array())) p.policy.at(l.get<int>()) = MemoryPolicy::Recompute;
    for (const auto& l : st.value("swap_layers", nlohmann::json::array())) p.policy.at(l.get<int>()) = MemoryPolicy::Swap;
    for (const auto& l : st.value("selective_layers", nlohmann::json::array()))
      p.policy.at(l.get<int>()) = MemoryPolicy::Selective;
    StagePrediction pr;
    pr.time_ms = st.value("time_ms", 0.0);
    pr.peak_memory_bytes = st.value("peak_memory_bytes", std::uint64_t{0});
    pr.memory_budget_bytes = st.value("memory_budget_bytes", std::uint64_t{0});
    pr.sync_ms = st.value("sync_ms", 0.0);
    pr.sync_exposed_ms = st.value("sync_exposed_ms", 0.0);
    p.predicted.push_back(pr);
    const int r = std::max(1, st.value("replicas", p.data_parallel));
    p.replicas.push_back(r);
    uneven = uneven || r != p.data_parallel;
  }
  if (!uneven) p.replicas.clear();  // every stage as the pipeline: no per-stage replication
  validate_plan(p, layers);
  if (j.contains("generated_order")) {
    const auto& o = j.at("generated_order");
    PlanOrder g;
    g.devices = o.at("devices").get<int>();
    g.microbatches = o.at("microbatches").get<int>();
    for (const auto& st : o.value("stages", nlohmann::json::array())) {
      g.f_ms.push_back(st.value("f_ms", 0.0));
      g.b_ms.push_back(st.value("b_ms", 0.0));
      g.w_ms.push_back(st.value("w_ms", 0.0));
      g.released_at_b.push_back(st.value("released_at_b", 0.0));
      // Plans saved before per-chunk shares counted every stage as a unit.
      g.held.push_back(st.value("held", 1.0));
    }
    g.hop_ms = o.value("hop_ms", std::vector<double>{});
    g.memory_limit = o.value("memory_limit", std::vector<double>{});
    g.source = o.value("source", "");
    g.generated_ms = o.value("generated_ms", 0.0);
    g.unit_order_ms = o.value("unit_order_ms", 0.0);
    g.order = o.at("order").get<std::vector<std::string>>();
    p.generated = std::move(g);
  }
  return p;
}

int layers_moved(const Plan& from, const Plan& to) {
  int moved = 0;
  int n = std::min(from.layer_count(), to.layer_count());
  for (int l = 0; l < n; ++l)
    if (from.stage_of(l) != to.stage_of(l)) ++moved;
  return moved;
}

}  // namespace pw

#include "core/spec/runtime_spec.h"

#include "core/spec/job_fields.h"
#include "core/spec/json_fields.h"
#include "core/spec/spec_bounds.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

ReplanSettings parse_replan(JsonFields p, RuntimeSpec& s) {
  ReplanSettings t;
  s.replan = p.boolean("enabled", true);
  s.planner = p.choice("planner", planner_names(), "vpipe");
  t.imbalance_threshold = p.number("imbalance_threshold", 0, 100, t.imbalance_threshold);
  t.imbalance_release = p.number("imbalance_release", 0, 100, t.imbalance_release);
  if (t.imbalance_release > t.imbalance_threshold)
    throw SpecError(p.path_of("imbalance_release"), "must not exceed imbalance_threshold (hysteresis)");
  t.sustain_iterations = p.integer<int>("sustain_iterations", 1, 1000000, t.sustain_iterations);
  t.cooldown_iterations = p.integer<int>("cooldown_iterations", 0, 1000000, t.cooldown_iterations);
  t.min_gain = p.number("min_gain", 0, 100, t.min_gain);
  t.memory_pressure = p.number("memory_pressure", 0, 1, t.memory_pressure);
  s.measure_iterations = p.integer<int>("measure_iterations", 1, 1000, s.measure_iterations);
  s.rebalance_at = p.integer<std::int64_t>("rebalance_at", -1, bounds::kIterations, -1);
  p.finish();
  return t;
}

ScriptedMigration parse_migration(const nlohmann::json& e, const std::string& path, int stages) {
  JsonFields f(e, path);
  ScriptedMigration sm;
  sm.iteration = f.integer<std::int64_t>("iteration", 0, bounds::kIterations);
  if (!f.has("stages") && !f.has("policy"))
    throw SpecError(path, "needs \"stages\" (layer ranges), \"policy\" (per-layer memory policies) or both");
  nlohmann::json pol = f.raw("policy");
  if (!pol.is_null()) {
    if (!pol.is_array() || pol.size() > static_cast<size_t>(bounds::kLayers))
      throw SpecError(path + ".policy", "must list one memory policy per layer");
    for (size_t k = 0; k < pol.size(); ++k) {
      auto mp = pol[k].is_string() ? memory_policy_from_string(pol[k].get<std::string>()) : std::nullopt;
      if (!mp) throw SpecError(path + ".policy[" + std::to_string(k) + "]", "must be \"keep\", \"recompute\" or \"swap\"");
      sm.policy.push_back(*mp);
    }
  }
  nlohmann::json ranges = f.raw("stages");
  if (!ranges.is_null()) {
    if (!ranges.is_array() || static_cast<int>(ranges.size()) != stages)
      throw SpecError(path + ".stages", "must list " + std::to_string(stages) + " [first, last] layer ranges");
    int next = 0;
    for (size_t k = 0; k < ranges.size(); ++k) {
      const auto& rg = ranges[k];
      std::string rp = path + ".stages[" + std::to_string(k) + "]";
      if (!rg.is_array() || rg.size() != 2) throw SpecError(rp, "must be [first, last]");
      JsonFields pair(nlohmann::json{{"first", rg[0]}, {"last", rg[1]}}, rp);
      StageRange sr{pair.integer<int>("first", 0, bounds::kLayers), pair.integer<int>("last", 0, bounds::kLayers)};
      if (sr.first_layer != next || sr.last_layer < sr.first_layer)
        throw SpecError(rp, "ranges must tile the layers in order without gaps (expected to start at layer " +
                                std::to_string(next) + ")");
      next = sr.last_layer + 1;
      sm.stages.push_back(sr);
    }
  }
  f.finish();
  return sm;
}

}  // namespace

RuntimeSpec parse_runtime(JsonFields f, int stages) {
  RuntimeSpec s;
  s.present = true;
  nlohmann::json slowdown = f.raw("slowdown");
  if (!slowdown.is_null()) {
    if (!slowdown.is_array() || static_cast<int>(slowdown.size()) != stages)
      throw SpecError("runtime.slowdown", "must be an array of " + std::to_string(stages) + " factors (one per stage)");
    for (size_t i = 0; i < slowdown.size(); ++i) {
      const auto& v = slowdown[i];
      if (!v.is_number() || !(v.get<double>() >= 1 && v.get<double>() <= 100))
        throw SpecError("runtime.slowdown[" + std::to_string(i) + "]", "must be a number in [1, 100]");
      s.slowdown.push_back(v.get<double>());
    }
  }
  s.slowdown_from = f.integer<std::int64_t>("slowdown_from", 0, bounds::kIterations, 0);
  if (f.has("replan")) s.trigger = parse_replan(f.object("replan"), s);
  nlohmann::json migrate = f.raw("migrate");
  if (!migrate.is_null()) {
    if (!migrate.is_array()) throw SpecError("runtime.migrate", "must be an array of {iteration, stages}");
    std::int64_t prev = -1;
    for (size_t i = 0; i < migrate.size(); ++i) {
      std::string path = "runtime.migrate[" + std::to_string(i) + "]";
      ScriptedMigration sm = parse_migration(migrate[i], path, stages);
      if (sm.iteration <= prev) throw SpecError(path + ".iteration", "must be larger than the previous one");
      prev = sm.iteration;
      s.migrate.push_back(std::move(sm));
    }
  }
  s.fail_in_migration = f.integer<int>("fail_in_migration", 0, bounds::kDevices - 1, -1);
  f.finish();
  return s;
}

void check_runtime_layers(const RuntimeSpec& r, int layers) {
  for (size_t i = 0; i < r.migrate.size(); ++i) {
    const auto& m = r.migrate[i];
    std::string path = "runtime.migrate[" + std::to_string(i) + "]";
    if (!m.policy.empty() && static_cast<int>(m.policy.size()) != layers)
      throw SpecError(path + ".policy", "must list one memory policy per layer (" + std::to_string(layers) + ")");
    if (!m.stages.empty() && m.stages.back().last_layer + 1 != layers)
      throw SpecError(path + ".stages", "covers " + std::to_string(m.stages.back().last_layer + 1) +
                                            " layers, the model has " + std::to_string(layers));
  }
}

}  // namespace pw

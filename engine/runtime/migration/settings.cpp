#include "runtime/migration/settings.h"

#include "core/spec/spec_error.h"

namespace pw::rt::migration {
namespace {

double number(const nlohmann::json& o, const char* key, double def, const std::string& path, double lo, double hi) {
  if (!o.contains(key)) return def;
  const auto& v = o[key];
  if (!v.is_number()) throw SpecError(path + "." + key, "must be a number");
  double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    throw SpecError(path + "." + key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

}  // namespace

Settings parse_settings(const nlohmann::json& raw, int stages, int layers) {
  Settings s;
  if (!raw.is_object() || !raw.contains("runtime")) return s;
  const auto& r = raw["runtime"];
  if (!r.is_object()) throw SpecError("runtime", "must be an object");
  s.present = true;
  if (r.contains("slowdown")) {
    const auto& f = r["slowdown"];
    if (!f.is_array() || static_cast<int>(f.size()) != stages)
      throw SpecError("runtime.slowdown", "must be an array of " + std::to_string(stages) + " factors (one per stage)");
    for (size_t i = 0; i < f.size(); ++i) {
      if (!f[i].is_number() || f[i].get<double>() < 1 || f[i].get<double>() > 100)
        throw SpecError("runtime.slowdown[" + std::to_string(i) + "]", "must be a number in [1, 100]");
      s.slowdown.push_back(f[i].get<double>());
    }
  }
  s.slowdown_from = static_cast<std::int64_t>(number(r, "slowdown_from", 0, "runtime", 0, 1e12));
  if (r.contains("replan")) {
    const auto& p = r["replan"];
    if (!p.is_object()) throw SpecError("runtime.replan", "must be an object");
    const std::string path = "runtime.replan";
    if (p.contains("enabled") && !p["enabled"].is_boolean()) throw SpecError(path + ".enabled", "must be true or false");
    s.replan = p.value("enabled", true);
    if (p.contains("planner")) {
      if (!p["planner"].is_string()) throw SpecError(path + ".planner", "must be a planner name");
      s.planner = p["planner"].get<std::string>();
    }
    auto& t = s.trigger;
    t.imbalance_threshold = number(p, "imbalance_threshold", t.imbalance_threshold, path, 0, 100);
    t.imbalance_release = number(p, "imbalance_release", t.imbalance_release, path, 0, 100);
    if (t.imbalance_release > t.imbalance_threshold)
      throw SpecError(path + ".imbalance_release", "must not exceed imbalance_threshold (hysteresis)");
    t.sustain_iterations = static_cast<int>(number(p, "sustain_iterations", t.sustain_iterations, path, 1, 1e6));
    t.cooldown_iterations = static_cast<int>(number(p, "cooldown_iterations", t.cooldown_iterations, path, 0, 1e6));
    t.min_gain = number(p, "min_gain", t.min_gain, path, 0, 100);
    t.memory_pressure = number(p, "memory_pressure", t.memory_pressure, path, 0, 1);
    s.measure_iterations = static_cast<int>(number(p, "measure_iterations", s.measure_iterations, path, 1, 1000));
    s.rebalance_at = static_cast<std::int64_t>(number(p, "rebalance_at", -1, path, -1, 1e12));
  }
  if (r.contains("migrate")) {
    const auto& m = r["migrate"];
    if (!m.is_array()) throw SpecError("runtime.migrate", "must be an array of {iteration, stages}");
    std::int64_t prev = -1;
    for (size_t i = 0; i < m.size(); ++i) {
      std::string path = "runtime.migrate[" + std::to_string(i) + "]";
      const auto& e = m[i];
      if (!e.is_object() || !e.contains("iteration") || !e["iteration"].is_number_integer() ||
          e["iteration"].get<std::int64_t>() < 0)
        throw SpecError(path + ".iteration", "must be a non-negative integer");
      ScriptedMigration sm;
      sm.iteration = e["iteration"].get<std::int64_t>();
      if (sm.iteration <= prev) throw SpecError(path + ".iteration", "must be larger than the previous one");
      prev = sm.iteration;
      if (!e.contains("stages") && !e.contains("policy"))
        throw SpecError(path, "needs \"stages\" (layer ranges), \"policy\" (per-layer memory policies) or both");
      if (e.contains("policy")) {
        const auto& pol = e["policy"];
        if (!pol.is_array() || static_cast<int>(pol.size()) != layers)
          throw SpecError(path + ".policy", "must list one memory policy per layer (" + std::to_string(layers) + ")");
        for (size_t k = 0; k < pol.size(); ++k) {
          auto mp = pol[k].is_string() ? memory_policy_from_string(pol[k].get<std::string>()) : std::nullopt;
          if (!mp) throw SpecError(path + ".policy[" + std::to_string(k) + "]", "must be \"keep\", \"recompute\" or \"swap\"");
          sm.policy.push_back(*mp);
        }
      }
      if (!e.contains("stages")) {
        s.migrate.push_back(sm);
        continue;
      }
      if (!e["stages"].is_array() || static_cast<int>(e["stages"].size()) != stages)
        throw SpecError(path + ".stages", "must list " + std::to_string(stages) + " [first, last] layer ranges");
      int next = 0;
      for (size_t k = 0; k < e["stages"].size(); ++k) {
        const auto& rg = e["stages"][k];
        std::string rp = path + ".stages[" + std::to_string(k) + "]";
        if (!rg.is_array() || rg.size() != 2 || !rg[0].is_number_integer() || !rg[1].is_number_integer())
          throw SpecError(rp, "must be [first, last]");
        StageRange sr{rg[0].get<int>(), rg[1].get<int>()};
        if (sr.first_layer != next || sr.last_layer < sr.first_layer)
          throw SpecError(rp, "ranges must tile the layers in order without gaps (expected to start at layer " +
                                  std::to_string(next) + ")");
        next = sr.last_layer + 1;
        sm.stages.push_back(sr);
      }
      if (next != layers)
        throw SpecError(path + ".stages", "covers " + std::to_string(next) + " layers, the model has " +
                                              std::to_string(layers));
      s.migrate.push_back(sm);
    }
  }
  if (r.contains("fail_in_migration")) {
    if (!r["fail_in_migration"].is_number_integer()) throw SpecError("runtime.fail_in_migration", "must be a rank");
    s.fail_in_migration = r["fail_in_migration"].get<int>();
  }
  return s;
}

Plan with_stages(const Plan& base, const std::vector<StageRange>& stages) {
  Plan p = base;
  p.stages = stages;
  p.layers_moved = layers_moved(base, p);
  p.predicted.clear();
  return p;
}

}  // namespace pw::rt::migration

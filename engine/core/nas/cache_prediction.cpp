#include "core/nas/cache_prediction.h"

#include "core/nas/device_cache_plan.h"
#include "core/spec/spec_error.h"

namespace pw::nas {

StageCacheFigures CachePrediction::total() const {
  StageCacheFigures t;
  for (const auto& s : stages) {
    t.uses += s.uses;
    t.hits += s.hits;
    t.loads += s.loads;
    t.evictions += s.evictions;
    t.load_bytes += s.load_bytes;
    t.stall_ms += s.stall_ms;
  }
  return t;
}

std::vector<double> supernet_slice_bytes(const NasJob& nj) {
  std::vector<double> out;
  for (const auto& st : nj.stages) {
    double b = 0;
    for (int l = st.first; l <= st.last; ++l)
      for (const auto& c : nj.space.layers[l].candidates) b += static_cast<double>(c.resident_bytes());
    out.push_back(b);
  }
  return out;
}

std::vector<std::int64_t> stage_capacities(const NasJob& nj) {
  std::vector<std::int64_t> out;
  const int p = static_cast<int>(nj.stages.size());
  for (int s = 0; s < p; ++s) out.push_back(cache_capacity(nj.budget_bytes, nj.space, s, p));
  return out;
}

std::vector<bool> stage_cache_active(const NasJob& nj) {
  auto cap = stage_capacities(nj);
  auto slice = supernet_slice_bytes(nj);
  std::vector<bool> out;
  for (size_t s = 0; s < cap.size(); ++s) out.push_back(static_cast<double>(cap[s]) < slice[s]);
  return out;
}

void check_device_budget(const NasJob& nj) {
  auto cap = stage_capacities(nj);
  for (size_t s = 0; s < nj.stages.size(); ++s) {
    auto steps = stage_cache_steps(nj.space, nj.sequence, nj.stages[s]);
    for (size_t b = 0; b < steps.size(); ++b) {
      std::int64_t need = 0;
      for (const auto& it : steps[b]) need += it.resident_bytes;
      if (need > cap[s])
        throw SpecError("search_space.device_budget_gb",
                        "subnet " + std::to_string(b) + " needs " + std::to_string(need) + " bytes of candidates "
                        "(weights, gradients, optimizer state) on stage " + std::to_string(s) + ", which has " +
                        std::to_string(cap[s]) + " bytes for candidates under this budget (the frozen stem or head "
                        "takes the rest); raise the budget");
    }
  }
}

CachePrediction predict_device_cache(const NasJob& nj) {
  auto in = supernet_sim_input(nj, supernet_mode(nj.job));
  in.cache_model = CacheModel::Planned;  // the trainer's cache
  auto r = simulate_supernet(in);
  CachePrediction p;
  p.eviction = r.eviction;
  p.cache_model = r.cache_model;
  p.budget_bytes = in.budget_bytes;
  p.slice_bytes = supernet_slice_bytes(nj);
  p.stages = r.stage_cache;
  return p;
}

nlohmann::json to_json(const StageCacheFigures& f) {
  return {{"uses", f.uses},   {"hits", f.hits},         {"hit_rate", f.hit_rate()},   {"loads", f.loads},
          {"evictions", f.evictions}, {"load_bytes", f.load_bytes}, {"stall_ms", f.stall_ms}};
}

nlohmann::json device_cache_record(const CachePrediction& predicted, const std::vector<std::int64_t>& capacities,
                                   const std::vector<std::optional<StageCacheFigures>>& measured) {
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < predicted.stages.size(); ++s) {
    nlohmann::json st{{"stage", s}, {"predicted", to_json(predicted.stages[s])}};
    st["capacity_bytes"] = s < capacities.size() ? capacities[s] : 0;
    st["slice_bytes"] = s < predicted.slice_bytes.size() ? predicted.slice_bytes[s] : 0;
    st["measured"] = s < measured.size() && measured[s] ? to_json(*measured[s]) : nlohmann::json(nullptr);
    stages.push_back(st);
  }
  return {{"eviction", predicted.eviction}, {"cache_model", predicted.cache_model},
          {"budget_bytes", predicted.budget_bytes}, {"stages", stages}};
}

}  // namespace pw::nas

#include "core/nas/cache_prediction.h"

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

}  // namespace pw::nas

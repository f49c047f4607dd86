#include "core/nas/supernet_run_info.h"

#include "core/model/profile_io.h"

namespace pw::nas {

nlohmann::json supernet_profile_json(const NasJob& nj) {
  ModelProfile p;
  p.microbatch_size = nj.job.training.microbatch_size;
  p.device = nj.job.cluster.device.preset;
  p.source = "supernet:" + nj.space.kind;
  for (const auto& layer : nj.space.layers)
    for (const auto& c : layer.candidates) {
      LayerProfile l = c.cost;
      l.name = layer.name + "/" + c.label();
      if (l.type.empty()) l.type = c.op;
      p.layers.push_back(std::move(l));
    }
  return profile_to_json(p);
}

nlohmann::json supernet_plan_json(const NasJob& nj) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : nj.stages)
    stages.push_back({{"first_layer", s.first},
                      {"last_layer", s.last},
                      {"recompute_layers", nlohmann::json::array()},
                      {"swap_layers", nlohmann::json::array()}});
  return {{"planner", "supernet"},
          {"feasible", true},
          {"stages", stages},
          {"candidate_budget_bytes", nj.budget_bytes},
          {"window", nj.space.window}};
}

}  // namespace pw::nas

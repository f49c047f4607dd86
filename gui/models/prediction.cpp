#include "gui/models/prediction.h"

#include "core/plan/planner.h"

namespace pw::gui {

Prediction predict(const JobSpec& job) {
  Prediction out;
  if (nas::is_supernet_job(job)) {
    out.supernet = predict_supernet(job);
    return out;
  }
  std::vector<std::string> order{job.pipeline.planner};
  for (const auto& n : planner_names())
    if (n != job.pipeline.planner) order.push_back(n);
  for (const auto& name : order) {
    PlannerOutcome o;
    o.planner = name;
    try {
      PreparedJob p = prepare_job(job, name);
      if (out.layer_names.empty()) {
        out.layers = p.profile.size();
        for (const auto& l : p.profile.layers) out.layer_names.push_back(l.name);
        out.profile = p.profile;
      }
      o.iteration = simulate_iteration(p);
      o.ok = true;
    } catch (const std::exception& e) {
      o.error = e.what();
    }
    out.outcomes.push_back(std::move(o));
  }
  return out;
}

}  // namespace pw::gui

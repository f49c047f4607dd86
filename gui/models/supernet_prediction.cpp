#include "gui/models/supernet_prediction.h"

#include <algorithm>

namespace pw::gui {
namespace {

// Keeps the first events only: the timeline shows a sample of the run, and
// a long training run would not fit in memory.
struct FirstEvents final : EventSink {
  std::vector<Event>* out;
  explicit FirstEvents(std::vector<Event>* o) : out(o) {}
  void on_event(const Event& e) override {
    if (out->size() < SupernetPrediction::kMaxEvents) out->push_back(e);
  }
};

}  // namespace

SupernetPrediction predict_supernet(const JobSpec& job) {
  SupernetPrediction p;
  nas::NasJob nj;
  nas::SupernetMode own;
  try {
    nj = nas::prepare_nas_job(job);
    own = nas::supernet_mode(job);
  } catch (const std::exception& e) {
    p.error = e.what();
    return p;
  }
  p.space = nj.space.kind;
  p.choice_layers = nj.space.size();
  p.max_choices = nj.space.max_choices();
  p.log10_subnets = nj.space.log10_subnets();
  p.budget_bytes = nj.budget_bytes;
  p.stages = nj.stages;
  for (const auto& l : nj.space.layers) p.layer_names.push_back(l.name);
  std::vector<nas::SupernetMode> modes{own};
  for (const auto& name : nas::supernet_mode_names())
    if (auto m = nas::supernet_mode_from_string(name); m && *m != own) modes.push_back(*m);
  for (auto mode : modes) {
    SupernetOutcome o;
    o.mode = nas::to_string(mode);
    try {
      FirstEvents sink(&p.events);
      o.result = nas::simulate_supernet(nas::supernet_sim_input(nj, mode), mode == own ? &sink : nullptr);
      o.ok = true;
    } catch (const std::exception& e) {
      o.error = e.what();
    }
    p.outcomes.push_back(std::move(o));
  }
  std::stable_sort(p.events.begin(), p.events.end(), [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  return p;
}

}  // namespace pw::gui

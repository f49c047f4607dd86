#include "core/calibrate/stage_compute.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace pw {
namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double ms(const Event& e) { return static_cast<double>(e.end_ns - e.start_ns) / 1e6; }

bool nested_in(const Event& child, const Event& parent) {
  return child.stage == parent.stage && child.microbatch == parent.microbatch && child.chunk == parent.chunk &&
         child.start_ns >= parent.start_ns && child.end_ns <= parent.end_ns;
}

struct Samples {
  int device = 0;
  std::vector<double> fwd, bwd;
};

void sort_by_device_and_start(std::vector<Event>& events) {
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.start_ns < b.start_ns;
  });
}

// Where each device's first iteration ends (its first optimizer step),
// when it has a second one to measure instead; 0 otherwise.
std::map<int, std::int64_t> warm_from(const std::vector<Event>& events) {
  std::map<int, std::vector<std::int64_t>> steps;
  for (const auto& e : events)
    if (e.kind == EventKind::OptimizerStep) steps[e.stage].push_back(e.end_ns);
  std::map<int, std::int64_t> from;
  for (auto& [device, ends] : steps) from[device] = ends.size() > 1 ? *std::min_element(ends.begin(), ends.end()) : 0;
  return from;
}

}  // namespace

std::vector<MeasuredStageCompute> measure_stage_compute(std::vector<Event> events) {
  sort_by_device_and_start(events);
  std::map<int, std::int64_t> warm = warm_from(events);
  std::map<int, std::vector<double>> steps;
  for (const auto& e : events)
    if (e.kind == EventKind::OptimizerStep && e.start_ns >= warm[e.stage])
      steps[e.stage].push_back(ms(e));
  std::map<int, double> optimizer;
  for (auto& [device, d] : steps) optimizer[device] = mean(d);

  std::map<std::pair<int, int>, Samples> by_range;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind != EventKind::Forward && e.kind != EventKind::Backward) continue;
    if (e.first_layer < 0 || e.start_ns < warm[e.stage]) continue;
    double own = ms(e);
    // Children start inside their parent and the list is sorted by start.
    for (size_t j = i + 1; j < events.size() && events[j].stage == e.stage && events[j].start_ns < e.end_ns; ++j) {
      const Event& c = events[j];
      const bool child = e.kind == EventKind::Forward ? c.kind == EventKind::SwapOut
                                                      : c.kind == EventKind::Recompute || c.kind == EventKind::SwapIn;
      if (child && nested_in(c, e)) own -= ms(c);
    }
    Samples& s = by_range[{e.first_layer, e.last_layer}];
    s.device = e.stage;
    (e.kind == EventKind::Forward ? s.fwd : s.bwd).push_back(std::max(0.0, own));
  }

  std::vector<MeasuredStageCompute> out;
  for (auto& [range, s] : by_range) {
    MeasuredStageCompute m;
    m.range = StageRange{range.first, range.second};
    m.device = s.device;
    m.microbatches = static_cast<int>(s.fwd.size());
    m.fwd_ms = mean(s.fwd);
    m.bwd_ms = mean(s.bwd);
    m.optimizer_ms = optimizer.count(s.device) ? optimizer[s.device] : 0;
    out.push_back(m);
  }
  return out;
}

std::optional<double> fit_action_overhead_us(std::vector<Event> events) {
  sort_by_device_and_start(events);
  std::map<int, std::int64_t> warm = warm_from(events);
  double gap_ns = 0;
  long actions = 0;
  int device = -1;
  std::int64_t prev_end = 0;
  for (const auto& e : events) {
    if (e.start_ns < warm[e.stage]) continue;
    if (e.stage != device) device = e.stage, prev_end = std::max<std::int64_t>(warm[e.stage], 0);
    // The device's first measured event follows its warm-up step's end.
    if (prev_end > 0 && e.start_ns > prev_end && e.kind != EventKind::OptimizerStep)
      gap_ns += static_cast<double>(e.start_ns - prev_end);
    prev_end = std::max(prev_end, e.end_ns);
    actions += e.kind == EventKind::Forward || e.kind == EventKind::Backward || e.kind == EventKind::OptimizerStep;
  }
  if (actions == 0) return std::nullopt;
  return gap_ns / 1e3 / static_cast<double>(actions);
}

ModelProfile calibrate_profile(const ModelProfile& profile, const std::vector<MeasuredStageCompute>& measured) {
  ModelProfile p = profile;
  auto in_range = [&](const StageRange& r) {
    return r.first_layer >= 0 && r.last_layer < p.size() && r.first_layer <= r.last_layer;
  };
  // The optimizer step is one per device, over all the ranges it holds.
  std::map<int, double> device_optimizer_ms, device_measured_optimizer_ms;
  for (const auto& m : measured) {
    if (!in_range(m.range)) continue;
    for (int l = m.range.first_layer; l <= m.range.last_layer; ++l) device_optimizer_ms[m.device] += profile.layers[l].optimizer_ms;
    device_measured_optimizer_ms[m.device] = m.optimizer_ms;
  }
  std::ostringstream note;
  note.precision(3);
  note << "compute calibrated in situ (measured / profiled per stage):";
  const char* sep = " ";
  for (const auto& m : measured) {
    if (!in_range(m.range)) continue;
    double fwd = 0, bwd = 0;
    for (int l = m.range.first_layer; l <= m.range.last_layer; ++l) fwd += profile.layers[l].fwd_ms, bwd += profile.layers[l].bwd_ms;
    const double opt = device_optimizer_ms[m.device];
    const double ff = fwd > 0 && m.fwd_ms > 0 ? m.fwd_ms / fwd : 1;
    const double fb = bwd > 0 && m.bwd_ms > 0 ? m.bwd_ms / bwd : 1;
    const double fo = opt > 0 && device_measured_optimizer_ms[m.device] > 0 ? device_measured_optimizer_ms[m.device] / opt : 1;
    for (int l = m.range.first_layer; l <= m.range.last_layer; ++l) {
      p.layers[l].fwd_ms *= ff;
      p.layers[l].bwd_ms *= fb;
      p.layers[l].optimizer_ms *= fo;
    }
    note << sep << "layers " << m.range.first_layer << "-" << m.range.last_layer << " forward x" << ff << ", backward x"
         << fb << ", optimizer x" << fo;
    sep = "; ";
  }
  p.assumptions.push_back(note.str());
  return p;
}

}  // namespace pw

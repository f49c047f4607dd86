#include "core/calibrate/stage_compute.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/events/event_kinds.h"

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

// A microbatch's backward is one event (full) or two (B and W of a split
// one): its time is the sum of the backward events over the gradients
// passed on (one per microbatch either way).
struct Samples {
  int device = 0;
  std::vector<double> fwd;
  double bwd_total = 0, weight_total = 0;
  int gradients = 0, weight_events = 0;
};

// Parents before the children nested in them: at the same start, the
// longer first (a backward and the recompute that opens it).
void sort_by_device_and_start(std::vector<Event>& events) {
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.stage, a.start_ns, b.end_ns) < std::tie(b.stage, b.start_ns, a.end_ns);
  });
}

}  // namespace

std::map<int, std::int64_t> warm_from(const std::vector<Event>& events) {
  std::map<int, std::vector<std::int64_t>> steps;
  for (const auto& e : events)
    if (e.kind == EventKind::OptimizerStep) steps[e.stage].push_back(e.end_ns);
  std::map<int, std::int64_t> from;
  for (auto& [device, ends] : steps) from[device] = ends.size() > 1 ? *std::min_element(ends.begin(), ends.end()) : 0;
  return from;
}

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
    if (!is_compute(e.kind)) continue;
    if (e.first_layer < 0 || e.start_ns < warm[e.stage]) continue;
    double own = ms(e);
    // Children start inside their parent and the list is sorted by start.
    for (size_t j = i + 1; j < events.size() && events[j].stage == e.stage && events[j].start_ns < e.end_ns; ++j) {
      const Event& c = events[j];
      if (runs_inside(c.kind, e.kind) && nested_in(c, e)) own -= ms(c);
    }
    own = std::max(0.0, own);
    Samples& s = by_range[{e.first_layer, e.last_layer}];
    s.device = e.stage;
    if (e.kind == EventKind::Forward) s.fwd.push_back(own);
    if (is_backward(e.kind)) s.bwd_total += own;
    if (carries_gradient(e.kind)) ++s.gradients;
    if (e.kind == EventKind::BackwardWeight) s.weight_total += own, ++s.weight_events;
  }

  std::vector<MeasuredStageCompute> out;
  for (auto& [range, s] : by_range) {
    MeasuredStageCompute m;
    m.range = StageRange{range.first, range.second};
    m.device = s.device;
    m.microbatches = static_cast<int>(s.fwd.size());
    m.fwd_ms = mean(s.fwd);
    m.bwd_ms = s.gradients > 0 ? s.bwd_total / s.gradients : 0;
    if (s.weight_events > 0) m.bwd_weight_ms = s.weight_total / s.weight_events;
    m.optimizer_ms = optimizer.count(s.device) ? optimizer[s.device] : 0;
    out.push_back(m);
  }
  return out;
}

namespace {
// One device's time outside its events, the actions it ran and the time it
// was busy (its events but receives, which are mostly waiting, and the gaps).
struct Gaps {
  double gap_ns = 0, busy_ns = 0;
  long actions = 0;
};
std::map<int, Gaps> action_gaps(std::vector<Event> events) {
  sort_by_device_and_start(events);
  std::map<int, std::int64_t> warm = warm_from(events);
  std::map<int, Gaps> by_device;
  int device = -1;
  std::int64_t prev_end = 0;
  for (const auto& e : events) {
    if (e.start_ns < warm[e.stage]) continue;
    if (e.stage != device) device = e.stage, prev_end = std::max<std::int64_t>(warm[e.stage], 0);
    Gaps& g = by_device[e.stage];
    // The device's first measured event follows its warm-up step's end.
    if (prev_end > 0 && e.start_ns > prev_end && e.kind != EventKind::OptimizerStep) {
      g.gap_ns += static_cast<double>(e.start_ns - prev_end);
      g.busy_ns += static_cast<double>(e.start_ns - prev_end);
    }
    // Nested events (a recompute inside its backward) lie inside the span
    // already counted.
    if (e.end_ns > prev_end && e.kind != EventKind::Recv)
      g.busy_ns += static_cast<double>(e.end_ns - std::max(prev_end, e.start_ns));
    prev_end = std::max(prev_end, e.end_ns);
    g.actions += is_action(e.kind);
  }
  return by_device;
}
}  // namespace

std::vector<MeasuredStageCompute> mean_stage_compute(const std::vector<std::vector<MeasuredStageCompute>>& runs) {
  if (runs.empty()) return {};
  std::vector<MeasuredStageCompute> mean = runs.front();
  for (std::size_t r = 1; r < runs.size(); ++r) {
    const auto& run = runs[r];
    if (run.size() != mean.size())
      throw std::invalid_argument("runs to average have " + std::to_string(mean.size()) + " and " + std::to_string(run.size()) + " stages");
    for (std::size_t s = 0; s < run.size(); ++s) {
      auto& m = mean[s];
      const auto& x = run[s];
      if (x.range.first_layer != m.range.first_layer || x.range.last_layer != m.range.last_layer || x.device != m.device ||
          (x.bwd_weight_ms >= 0) != (m.bwd_weight_ms >= 0))
        throw std::invalid_argument("runs to average differ at stage " + std::to_string(s) +
                                    " (layers, device or split backward): one partition only");
      m.fwd_ms += x.fwd_ms;
      m.bwd_ms += x.bwd_ms;
      m.optimizer_ms += x.optimizer_ms;
      if (m.bwd_weight_ms >= 0) m.bwd_weight_ms += x.bwd_weight_ms;
      m.microbatches += x.microbatches;
    }
  }
  const double n = static_cast<double>(runs.size());
  for (auto& m : mean) {
    m.fwd_ms /= n;
    m.bwd_ms /= n;
    m.optimizer_ms /= n;
    if (m.bwd_weight_ms >= 0) m.bwd_weight_ms /= n;
  }
  return mean;
}

std::optional<double> fit_action_overhead_us(std::vector<Event> events) {
  return fit_action_overhead_us(std::vector<std::vector<Event>>{std::move(events)});
}

std::optional<double> fit_action_overhead_us(const std::vector<std::vector<Event>>& runs) {
  std::map<int, Gaps> all;
  for (const auto& run : runs)
    for (const auto& [device, g] : action_gaps(run)) {
      all[device].gap_ns += g.gap_ns;
      all[device].busy_ns += g.busy_ns;
      all[device].actions += g.actions;
    }
  const Gaps* busiest = nullptr;
  for (const auto& [device, g] : all)
    if (g.actions > 0 && (!busiest || g.busy_ns > busiest->busy_ns)) busiest = &g;
  if (!busiest) return std::nullopt;
  return busiest->gap_ns / 1e3 / static_cast<double>(busiest->actions);
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
    double fwd = 0, bwd = 0, weight = 0;
    for (int l = m.range.first_layer; l <= m.range.last_layer; ++l)
      fwd += profile.layers[l].fwd_ms, bwd += profile.layers[l].bwd_ms, weight += weight_grad_ms(profile.layers[l]);
    const double opt = device_optimizer_ms[m.device];
    const double ff = fwd > 0 && m.fwd_ms > 0 ? m.fwd_ms / fwd : 1;
    const double fb = bwd > 0 && m.bwd_ms > 0 ? m.bwd_ms / bwd : 1;
    const double fo = opt > 0 && device_measured_optimizer_ms[m.device] > 0 ? device_measured_optimizer_ms[m.device] / opt : 1;
    // A split run measured W apart: B and W are scaled each to its own
    // measure. Otherwise W keeps its share of the scaled backward.
    const bool split = m.bwd_weight_ms >= 0 && weight > 0 && bwd - weight > 0 && m.bwd_ms > m.bwd_weight_ms;
    const double fw = split ? m.bwd_weight_ms / weight : fb;
    const double fi = split ? (m.bwd_ms - m.bwd_weight_ms) / (bwd - weight) : fb;
    for (int l = m.range.first_layer; l <= m.range.last_layer; ++l) {
      LayerProfile& L = p.layers[l];
      L.fwd_ms *= ff;
      L.optimizer_ms *= fo;
      if (split) {
        const double w = weight_grad_ms(profile.layers[l]);
        L.bwd_ms = (L.bwd_ms - w) * fi + w * fw;
        L.bwd_weight_ms = w * fw;
      } else {
        L.bwd_ms *= fb;
        if (L.bwd_weight_ms >= 0) L.bwd_weight_ms *= fb;
      }
    }
    note << sep << "layers " << m.range.first_layer << "-" << m.range.last_layer << " forward x" << ff;
    if (split) note << ", input gradient x" << fi << ", weight gradient x" << fw;
    else note << ", backward x" << fb;
    note << ", optimizer x" << fo;
    sep = "; ";
  }
  p.assumptions.push_back(note.str());
  return p;
}

}  // namespace pw

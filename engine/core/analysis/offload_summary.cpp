#include "core/analysis/offload_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "core/events/event_kinds.h"
#include "core/plan/layer_list.h"

namespace pw {
namespace {

// Busy time of intervals that may overlap (the engine's per-layer swaps
// nest inside one another's span only in time, never in bytes).
std::int64_t union_ns(std::vector<std::pair<std::int64_t, std::int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  std::int64_t total = 0, end = INT64_MIN;
  for (auto [s, e] : spans) {
    if (s >= end) {
      total += e - s;
      end = e;
    } else if (e > end) {
      total += e - end;
      end = e;
    }
  }
  return total;
}

}  // namespace

std::optional<OffloadSummary> offload_summary(const std::vector<Event>& events, const Attribution& att, int iteration) {
  std::map<int, const StageIteration*> window;
  for (const auto& s : att.stage_iterations)
    if (s.iteration == iteration) window[s.stage] = &s;
  struct Acc {
    std::set<std::int32_t> layers;
    std::int64_t out = 0, in = 0, stash_out = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> outs, ins;
    std::map<std::pair<int, int>, MicrobatchOffload> mbs;
  };
  std::map<int, Acc> acc;
  // Each microbatch's B end on a stage: a swap from then on moves W's stash.
  std::map<std::tuple<int, int, int>, std::int64_t> b_end;
  for (const Event& e : events)
    if (e.kind == EventKind::BackwardInput) {
      auto w = window.find(e.stage);
      if (w == window.end() || e.start_ns < w->second->start_ns || e.start_ns >= w->second->end_ns) continue;
      b_end[{e.stage, e.microbatch, e.chunk}] = e.end_ns;
    }
  for (const Event& e : events) {
    if (!is_swap(e.kind)) continue;
    auto w = window.find(e.stage);
    if (w == window.end() || e.start_ns < w->second->start_ns || e.start_ns >= w->second->end_ns) continue;
    Acc& a = acc[e.stage];
    MicrobatchOffload& m = a.mbs[{e.microbatch, e.chunk}];
    m.microbatch = e.microbatch;
    m.chunk = e.chunk;
    auto b = b_end.find({e.stage, e.microbatch, e.chunk});
    const bool stash = b != b_end.end() && e.start_ns >= b->second;
    if (stash) {
      auto& s0 = e.kind == EventKind::SwapOut ? m.stash_out_start_ns : m.stash_in_start_ns;
      auto& s1 = e.kind == EventKind::SwapOut ? m.stash_out_end_ns : m.stash_in_end_ns;
      s0 = s0 < 0 ? e.start_ns : std::min(s0, e.start_ns);
      s1 = std::max(s1, e.end_ns);
      if (e.kind == EventKind::SwapOut) a.stash_out += e.bytes;
      (e.kind == EventKind::SwapOut ? a.out : a.in) += e.bytes;
      (e.kind == EventKind::SwapOut ? a.outs : a.ins).emplace_back(e.start_ns, e.end_ns);
    } else if (e.kind == EventKind::SwapOut) {
      for (std::int32_t l = e.first_layer; l >= 0 && l <= e.last_layer; ++l) a.layers.insert(l);
      a.out += e.bytes;
      a.outs.emplace_back(e.start_ns, e.end_ns);
      m.out_start_ns = m.out_start_ns < 0 ? e.start_ns : std::min(m.out_start_ns, e.start_ns);
      m.out_end_ns = std::max(m.out_end_ns, e.end_ns);
    } else {
      a.in += e.bytes;
      a.ins.emplace_back(e.start_ns, e.end_ns);
      m.in_start_ns = m.in_start_ns < 0 ? e.start_ns : std::min(m.in_start_ns, e.start_ns);
      m.in_end_ns = std::max(m.in_end_ns, e.end_ns);
    }
  }
  if (acc.empty()) return std::nullopt;
  OffloadSummary r;
  for (auto& [stage, a] : acc) {
    StageOffload s;
    s.stage = stage;
    s.layers.assign(a.layers.begin(), a.layers.end());
    s.bytes_out = a.out;
    s.bytes_in = a.in;
    s.stash_bytes_out = a.stash_out;
    s.link_ns = union_ns(a.outs) + union_ns(a.ins);  // two channels: one each way
    s.exposed_ns = window[stage]->cause_ns[static_cast<int>(IdleCause::SwapStall)];
    for (auto& [key, m] : a.mbs) s.microbatches.push_back(m);
    std::sort(s.microbatches.begin(), s.microbatches.end(), [](const MicrobatchOffload& x, const MicrobatchOffload& y) {
      const auto kx = x.out_start_ns >= 0 ? x.out_start_ns : x.in_start_ns;
      const auto ky = y.out_start_ns >= 0 ? y.out_start_ns : y.in_start_ns;
      return kx < ky;
    });
    r.link_ns += s.link_ns;
    r.exposed_ns += s.exposed_ns;
    r.bytes_out += s.bytes_out;
    r.stash_bytes_out += s.stash_bytes_out;
    r.stages.push_back(std::move(s));
  }
  return r;
}

std::vector<std::string> offload_lines(const OffloadSummary& o) {
  auto ms = [](std::int64_t ns) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", static_cast<double>(ns) / 1e6);
    return std::string(b);
  };
  auto gib = [](std::int64_t bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
    return std::string(b);
  };
  std::vector<std::string> out;
  out.push_back("activation offload (swap policy, over the host link): " + ms(o.link_ns) + " ms of transfers, " +
                ms(o.hidden_ns()) + " ms hidden behind compute, " + ms(o.exposed_ns) + " ms exposed (swap_stall)");
  for (const StageOffload& s : o.stages) {
    const std::vector<int> layers(s.layers.begin(), s.layers.end());
    // Where W's stash went too, how much of what went out it was.
    const std::string stash = s.stash_bytes_out > 0 ? " (W's stash between B and W: " + gib(s.stash_bytes_out) + ")" : "";
    out.push_back("stage " + std::to_string(s.stage) + ": layers " + layer_list(layers) + " of " +
                  std::to_string(s.microbatches.size()) + " microbatch(es), " + gib(s.bytes_out) + " out" + stash +
                  "; link " + ms(s.link_ns) + " ms, hidden " + ms(s.hidden_ns()) + " ms, exposed " + ms(s.exposed_ns) +
                  " ms");
  }
  return out;
}

}  // namespace pw

#pragma once
// What the hand-timed offload tests share (test_offload_timeline.cpp,
// test_stash_offload.cpp): a one-layer-per-stage pipeline with a host link
// of 1 ms per 10^6 bytes, an event log read back as [start, end) spans in
// ms, and the swap stalls the idle attribution names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/analysis/idle_attribution.h"
#include "core/events/event_kinds.h"
#include "uniform_pipeline.h"

namespace pw::test {

using Span = std::pair<double, double>;

// One layer per stage: forward f, backward b of which w is W, nothing sent
// between stages (no output bytes), `act` activation bytes and `input`
// bytes of input (W's stash: input + output gradient), a host link of
// 8 Gbit/s: 1 ms per 10^6 bytes each way.
inline Pipeline one_layer_offload_pipeline(ScheduleKind kind, int p, int m, double f, double b, double w,
                                           std::uint64_t act, std::uint64_t input) {
  LayerProfile L;
  L.fwd_ms = f;
  L.bwd_ms = b;
  L.bwd_weight_ms = w;
  L.activation_bytes = act;
  L.input_bytes = input;
  Pipeline s = uniform_pipeline(kind, p, m, 1, 1, L);
  s.device.host_link_gbps = 8;
  return s;
}

struct EventLog : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
  // Every event of `kind` for (stage, microbatch), by start.
  std::vector<Span> all(EventKind kind, int stage, int mb) const {
    std::vector<Span> out;
    for (const Event& e : events)
      if (e.kind == kind && e.stage == stage && e.microbatch == mb) out.emplace_back(e.start_ns / 1e6, e.end_ns / 1e6);
    std::sort(out.begin(), out.end());
    return out;
  }
  // The one event of `kind` for (stage, microbatch); a failure if none or two.
  Span one(EventKind kind, int stage, int mb) const {
    auto v = all(kind, stage, mb);
    EXPECT_EQ(v.size(), 1u) << "stage " << stage << " microbatch " << mb;
    return v.empty() ? Span(-1, -1) : v.front();
  }
  // The bytes of every event of `kind` for (stage, microbatch), by start.
  std::vector<std::int64_t> bytes(EventKind kind, int stage, int mb) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> v;
    for (const Event& e : events)
      if (e.kind == kind && e.stage == stage && e.microbatch == mb) v.emplace_back(e.start_ns, e.bytes);
    std::sort(v.begin(), v.end());
    std::vector<std::int64_t> out;
    for (auto [t, b] : v) out.push_back(b);
    return out;
  }
  // The idle time the attribution calls swap_stall on `stage`, in ms, over
  // the one iteration logged.
  double swap_stall_ms(int stage) const {
    Attribution att = attribute_idle(events);
    EXPECT_EQ(att.iterations, 1);
    double stall = 0;
    for (const auto& st : att.stage_iterations)
      if (st.stage == stage) stall += st.cause_ns[static_cast<int>(IdleCause::SwapStall)] / 1e6;
    return stall;
  }
};

}  // namespace pw::test

#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/plan/pipeline_model.h"

namespace pw {

// A partition as the last layer of each stage (ends.back() == layers - 1).
using Layout = std::vector<int>;
std::vector<StageRange> to_ranges(const Layout& ends);
Layout to_layout(const std::vector<StageRange>& ranges);

// VPipe's joint search over partitions with every stage's memory policy
// chosen by the model's per-range solver (results cached per stage and
// range).
class PartitionSearch {
 public:
  explicit PartitionSearch(const PipelineModel& model) : m_(model) {}

  const RangeChoice& choice(int stage, int a, int b);
  // The solver's policy for layers a..b on `stage` (choice's), cached
  // apart: a plan needs it, an estimate does not.
  const std::vector<MemoryPolicy>& policy(int stage, int a, int b);
  std::vector<RangeChoice> choices(const Layout& ends);
  double estimate_ms(const Layout& ends);  // +inf when a stage does not fit
  // estimate_ms of `ends`, a layout that differs from `base` (whose choices
  // are `base_choices`) in a few stages only: the same figure, but only the
  // changed stages are looked up (a climb's neighbours, on hundreds of
  // stages, would otherwise spend most of their time in the cache).
  double estimate_near(const Layout& ends, const Layout& base, const std::vector<RangeChoice>& base_choices);
  // Largest stage period of a layout (+inf when a stage does not fit).
  double bottleneck_ms(const Layout& ends);

  // Left to right, every stage takes as many layers as keep its period
  // within T and its memory within budget. When ranges that fit stay
  // fitting as they shrink, this finds a layout whenever one exists, and
  // each stage ends as late as any feasible layout's (the right-to-left
  // pass: as early). Empty when it finds none.
  Layout greedy_left(double T);
  Layout greedy_right(double T);

  // The smallest bottleneck period the greedy reaches (binary search on
  // T, tightened to each success's actual bottleneck); +inf when no
  // layout fits at any T.
  double min_bottleneck_ms();

  // Among layouts whose stages all fit with period <= T and whose ends lie
  // between greedy_right(T) and greedy_left(T), the one with the least fill
  // (sum of stage compute and hops), by dynamic programming. Empty if none.
  Layout min_fill_layout(double T);

  const PipelineModel& model() const { return m_; }

 private:
  double period(int stage, int a, int b) {
    const RangeChoice& c = choice(stage, a, b);
    return c.fits ? c.period_ms : kInf;
  }
  static constexpr double kInf = 1e300;
  const PipelineModel& m_;
  std::uint64_t key(int stage, int a, int b) const;
  std::unordered_map<std::uint64_t, RangeChoice> cache_;
  std::unordered_map<std::uint64_t, std::vector<MemoryPolicy>> policies_;
  // estimate_near's copies, kept to reuse their memory.
  std::vector<RangeChoice> near_choices_;
  std::vector<StageRange> near_ranges_;
};

}  // namespace pw

// Activation offload inside pipeline schedules (issue 43), on the
// repository's transformer jobs with a PCIe 4 x16 host link: 256 Gbit/s per
// direction (32 GB/s nominal), for every device alike. Two parts, every
// figure a ratio against baselines simulated in the same run:
//  1. The share of activations offloaded at no more than 2% simulated
//     slowdown. Memory is left unbounded so the planner's partition keeps
//     every layer (the baseline, `keep`); then layers go to swap one at a
//     time, the largest activations of the earliest stages first (they hold
//     the most microbatches), each kept on swap only if the simulated
//     iteration stays within 1.02 x keep's and the activations at the
//     devices' peaks shrink (a last stage's backward follows its forward at
//     once: its offload saves nothing there). Printed: the share of each
//     microbatch's activation bytes offloaded, the iteration and the
//     busiest device's peak memory against keep, and the same layers
//     recomputed instead of swapped (the other way to drop them).
//  2. Configurations that fit only with offload: the device budget set
//     below keep's need (a fraction of its busiest device's peak), planned
//     by vpipe with keep / recompute / swap, and again with no host link
//     (keep / recompute only). Keep does not fit by construction; where the
//     offloading plan is faster than the best recompute-only plan, the
//     budget is one that only offload meets at that speed.
//  3. Zero-bubble orders at the devices' own memory (bert24 on 11-16 GB
//     cards, gpt32 on 16-24 GB): a swapped layer's W stash goes to the host
//     between B and W (issue 43), which is what lets ZB-H2's 2p - 1
//     microbatches fit; printed: the plan with offload (fits, iteration,
//     the share of its offloaded bytes that is W's stash) beside keep /
//     recompute only (no host link). Before the stash went out, bert24 under
//     ZB-H2 fitted at none of 11-14 GB (docs/schedules.md).
// PW_BENCH_QUICK=1: one job, one schedule, one budget.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "core/cost/stage_cost.h"
#include "core/job/job_plan.h"
#include "core/sim/simulator.h"
#include "core/spec/job_spec.h"

using namespace pw;

namespace {

constexpr double kPcie4Gbps = 256;  // x16, per direction
constexpr double kSlowdown = 1.02;

nlohmann::json job_doc(const std::string& name, const std::string& schedule) {
  std::ifstream in(std::string(PW_SOURCE_DIR) + "/resources/jobs/" + name + ".json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["pipeline"]["schedule"] = schedule;
  doc["pipeline"]["planner"] = "vpipe";
  doc["cluster"]["host_link_gbps"] = kPcie4Gbps;
  return doc;
}

// Activations at each device's peak, summed over the devices: the peak less
// what the device holds from the start (weights, gradients, optimizer
// state, transfer buffers), which no policy changes.
std::uint64_t activation_peaks(const PreparedJob& p, const SimResult& r) {
  std::vector<std::uint64_t> fixed(r.stages.size(), 0);
  for (int j = 0; j < static_cast<int>(p.plan.stages.size()); ++j) {
    const StageCost c = stage_cost(p.profile, p.plan.stages[j], p.plan.policy);
    fixed[p.schedule->device_of_virtual_stage(j)] += c.static_bytes + c.transfer_buffer_bytes;
  }
  std::uint64_t sum = 0;
  for (std::size_t d = 0; d < r.stages.size(); ++d) sum += r.stages[d].peak_memory_bytes - fixed[d];
  return sum;
}

// The mean device's peak: no partition keeps every device below it.
std::uint64_t mean_peak(const SimResult& r) {
  std::uint64_t sum = 0;
  for (const auto& s : r.stages) sum += s.peak_memory_bytes;
  return sum / std::max<std::size_t>(1, r.stages.size());
}

struct ShareRow {
  double keep_ms = 0, offload_ms = 0, recompute_ms = 0;
  double share = 0;  // of each microbatch's activation bytes
  int layers = 0;
  std::uint64_t keep_peak = 0, offload_peak = 0, recompute_peak = 0;  // activation_peaks
  std::uint64_t keep_mean = 0;                                         // mean_peak
};

// Part 1 for one job and schedule.
ShareRow offload_share(const std::string& name, const std::string& schedule) {
  nlohmann::json doc = job_doc(name, schedule);
  doc["cluster"]["memory_gb"] = 4096;  // unbounded: the planner keeps every layer
  PreparedJob p = prepare_job(parse_job(doc));
  Plan& plan = p.plan;
  std::fill(plan.policy.begin(), plan.policy.end(), MemoryPolicy::Keep);
  ShareRow row;
  const SimResult keep = simulate(p.sim_input());
  row.keep_ms = keep.iteration_time_ms;
  row.keep_peak = activation_peaks(p, keep);
  row.keep_mean = mean_peak(keep);
  std::vector<int> order(p.profile.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const int sa = plan.stage_of(a), sb = plan.stage_of(b);
    if (sa != sb) return sa < sb;
    return p.profile.layers[a].activation_bytes > p.profile.layers[b].activation_bytes;
  });
  std::uint64_t total = 0, moved = 0;
  for (const auto& l : p.profile.layers) total += l.activation_bytes;
  SimResult best = keep;
  std::uint64_t held = row.keep_peak;
  for (int l : order) {
    if (p.profile.layers[l].activation_bytes == 0) continue;
    plan.policy[l] = MemoryPolicy::Swap;
    SimResult r = simulate(p.sim_input());
    const std::uint64_t act = activation_peaks(p, r);
    if (r.iteration_time_ms <= kSlowdown * row.keep_ms && act < held) {
      moved += p.profile.layers[l].activation_bytes;
      ++row.layers;
      best = r;
      held = act;
    } else {
      plan.policy[l] = MemoryPolicy::Keep;
    }
  }
  row.offload_ms = best.iteration_time_ms;
  row.offload_peak = activation_peaks(p, best);
  row.share = total ? static_cast<double>(moved) / static_cast<double>(total) : 0;
  for (auto& pol : plan.policy)
    if (pol == MemoryPolicy::Swap) pol = MemoryPolicy::Recompute;
  const SimResult rec = simulate(p.sim_input());
  row.recompute_ms = rec.iteration_time_ms;
  row.recompute_peak = activation_peaks(p, rec);
  return row;
}

struct FitRow {
  bool with_offload = false, without = false;
  double offload_ms = 0, recompute_ms = 0;
  int swapped = 0, recomputed_off = 0, recomputed_rec = 0;
};

// Part 3 for one job, schedule and device memory (GB).
struct StashRow {
  bool with_offload = false, without = false;
  double offload_ms = 0, recompute_ms = 0;
  double stash_share = 0;  // of the bytes each microbatch sends to the host
};

StashRow stash_fit(const std::string& name, const std::string& schedule, double gb) {
  StashRow row;
  nlohmann::json doc = job_doc(name, schedule);
  doc["cluster"]["memory_gb"] = gb;
  {
    PreparedJob p = prepare_job(parse_job(doc));
    const SimResult r = simulate(p.sim_input());
    row.with_offload = r.feasible;
    row.offload_ms = r.iteration_time_ms;
    std::uint64_t act = 0, stash = 0;
    for (const auto& range : p.plan.stages) {
      const StageCost c = stage_cost(p.profile, range, p.plan.policy);
      act += c.swap_bytes_per_mb;
      stash += c.w_stash_swap_bytes_per_mb;
    }
    row.stash_share = act + stash ? static_cast<double>(stash) / static_cast<double>(act + stash) : 0;
  }
  doc["cluster"]["host_link_gbps"] = 1e-6;
  PreparedJob p = prepare_job(parse_job(doc));
  const SimResult r = simulate(p.sim_input());
  row.without = r.feasible;
  row.recompute_ms = r.iteration_time_ms;
  return row;
}

int count(const Plan& plan, MemoryPolicy pol) {
  return static_cast<int>(std::count(plan.policy.begin(), plan.policy.end(), pol));
}

// Part 2 for one job, schedule and budget (bytes).
FitRow fit_under(const std::string& name, const std::string& schedule, std::uint64_t budget) {
  FitRow row;
  nlohmann::json doc = job_doc(name, schedule);
  doc["cluster"]["memory_gb"] = static_cast<double>(budget) / (1024.0 * 1024 * 1024);
  {
    PreparedJob p = prepare_job(parse_job(doc));
    const SimResult r = simulate(p.sim_input());
    row.with_offload = r.feasible;
    row.offload_ms = r.iteration_time_ms;
    row.swapped = count(p.plan, MemoryPolicy::Swap);
    row.recomputed_off = count(p.plan, MemoryPolicy::Recompute);
  }
  doc["cluster"]["host_link_gbps"] = 1e-6;  // no host link: keep and recompute only
  PreparedJob p = prepare_job(parse_job(doc));
  const SimResult r = simulate(p.sim_input());
  row.without = r.feasible;
  row.recompute_ms = r.iteration_time_ms;
  row.recomputed_rec = count(p.plan, MemoryPolicy::Recompute);
  return row;
}

}  // namespace

int main() {
  const bool quick = bench::quick();
  const std::vector<std::string> jobs =
      quick ? std::vector<std::string>{"bert24-4gpu"} : std::vector<std::string>{"gpt32-8gpu", "bert24-4gpu", "bert48-8gpu"};
  const std::vector<std::string> schedules =
      quick ? std::vector<std::string>{"zb-h2"} : std::vector<std::string>{"1f1b", "zb-h1", "zb-h2"};
  std::printf("activation offload over a PCIe 4 x16 host link (%.0f Gbit/s per direction), simulated\n", kPcie4Gbps);
  std::printf("\n1. share of activations offloaded at <= %.0f%% slowdown (memory unbounded; ratios vs keep)\n",
              100 * (kSlowdown - 1));
  std::printf("  %-12s %-7s %7s %8s %10s %10s %11s %11s\n", "job", "order", "layers", "share", "iteration",
              "act. peak", "recompute", "rec. peak");
  std::vector<std::pair<std::string, std::pair<std::string, std::uint64_t>>> needs;
  for (const auto& j : jobs)
    for (const auto& s : schedules) {
      const ShareRow r = offload_share(j, s);
      std::printf("  %-12s %-7s %7d %7.1f%% %9.4fx %9.3fx %10.4fx %10.3fx\n", j.c_str(), s.c_str(), r.layers,
                  100 * r.share, r.offload_ms / r.keep_ms, static_cast<double>(r.offload_peak) / r.keep_peak,
                  r.recompute_ms / r.keep_ms, static_cast<double>(r.recompute_peak) / r.keep_peak);
      needs.push_back({j, {s, r.keep_mean}});
    }
  std::printf("  (iteration, act. peak: the offloading plan's iteration and activations at the devices' peaks, summed,\n"
              "   over keep's; recompute, rec. peak: the same layers recomputed instead)\n");

  const std::vector<double> fractions = quick ? std::vector<double>{0.8} : std::vector<double>{0.9, 0.8, 0.7};
  std::printf("\n2. budgets below keep's need (a fraction of keep's mean device peak, which no partition keeps every\n"
              "   device under): vpipe with offload vs without (no host link: keep and recompute only)\n");
  std::printf("  %-12s %-7s %6s %13s %13s %9s %8s %10s\n", "job", "order", "budget", "with offload", "without", "ratio",
              "swapped", "recomputed");
  int only_offload = 0, rows = 0;
  for (const auto& [j, sn] : needs) {
    const auto& [s, need] = sn;
    for (double f : fractions) {
      const FitRow r = fit_under(j, s, static_cast<std::uint64_t>(f * static_cast<double>(need)));
      ++rows;
      auto cell = [](bool fits, double ms) {
        char buf[32];
        if (fits) std::snprintf(buf, sizeof buf, "%.1f ms", ms);
        else std::snprintf(buf, sizeof buf, "no fit");
        return std::string(buf);
      };
      // Keep fits where the plan without a host link needs no recompute.
      const bool keep_fits = r.without && r.recomputed_rec == 0;
      const bool faster = !keep_fits && r.with_offload && (!r.without || r.offload_ms < r.recompute_ms);
      if (faster) ++only_offload;
      std::printf("  %-12s %-7s %5.0f%% %13s %13s %9s %8d %5d/%-4d%s\n", j.c_str(), s.c_str(), 100 * f,
                  cell(r.with_offload, r.offload_ms).c_str(), cell(r.without, r.recompute_ms).c_str(),
                  r.with_offload && r.without ? (std::to_string(r.offload_ms / r.recompute_ms).substr(0, 6) + "x").c_str()
                                              : "-",
                  r.swapped, r.recomputed_off, r.recomputed_rec, faster ? "  <- offload only" : "");
    }
  }
  std::printf("  (recomputed: layers the plan with / without offload recomputes; ratio: iteration with / without)\n"
              "  %d of %d budgets: keep fits under none of them and offload meets them faster than recompute alone\n",
              only_offload, rows);

  struct StashCase {
    std::string job, schedule;
    std::vector<double> gb;
  };
  const std::vector<StashCase> cases =
      quick ? std::vector<StashCase>{{"bert24-4gpu", "zb-h2", {14}}}
            : std::vector<StashCase>{{"bert24-4gpu", "zb-h2", {11, 12, 14, 16}},
                                     {"bert24-4gpu", "zb-h1", {11, 12}},
                                     {"gpt32-8gpu", "zb-h2", {16, 20, 24}}};
  std::printf("\n3. zero-bubble orders at a device's memory: W's stash of swapped layers offloaded between B and W\n");
  std::printf("  %-12s %-7s %6s %13s %13s %9s %12s\n", "job", "order", "GB", "with offload", "without", "ratio",
              "stash share");
  int stash_only = 0;
  for (const auto& c : cases)
    for (double gb : c.gb) {
      const StashRow r = stash_fit(c.job, c.schedule, gb);
      auto cell = [](bool fits, double ms) {
        char buf[32];
        if (fits) std::snprintf(buf, sizeof buf, "%.1f ms", ms);
        else std::snprintf(buf, sizeof buf, "no fit");
        return std::string(buf);
      };
      const bool only = r.with_offload && !r.without;
      if (only) ++stash_only;
      std::printf("  %-12s %-7s %6.0f %13s %13s %9s %11.1f%%%s\n", c.job.c_str(), c.schedule.c_str(), gb,
                  cell(r.with_offload, r.offload_ms).c_str(), cell(r.without, r.recompute_ms).c_str(),
                  r.with_offload && r.without ? (std::to_string(r.offload_ms / r.recompute_ms).substr(0, 6) + "x").c_str()
                                              : "-",
                  100 * r.stash_share, only ? "  <- offload only" : "");
    }
  std::printf("  (stash share: of the bytes the plan sends to the host per microbatch, W's stash; %d configuration(s)\n"
              "   fit only with offload)\n",
              stash_only);
  return 0;
}

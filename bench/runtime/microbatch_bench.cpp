// pw_bench_microbatch: costs that know the microbatch, against real runs.
//   1. fidelity per microbatch size: the demo CNN and the tiny GPT on 2
//      stages, real runs at microbatch 2, 4, 8, 16, 32 against the
//      simulator's prediction with (a) the new model: every layer measured
//      at those sizes and calibrated in situ at each, as `profile --in-situ`
//      does; the same held out, calibrated at 2, 8 and 32 only (4 and 16
//      out of sample); and (b) the old linear model: one size measured (the
//      job's), calibrated in situ at that size, scaled linearly.
//   2. the size chosen: the plan with microbatch_size "auto" on the new
//      model against the best size of the real sweep (target within 3%).
//   3. advice that holds: every suggestion explain's rule offers for the
//      chosen job, applied and run, against the job as chosen.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "bench_quick.h"
#include "core/analysis/suggestions.h"
#include "core/calibrate/microbatch_calibration.h"
#include "core/calibrate/host_costs.h"
#include "core/calibrate/overhead_closure.h"
#include "core/calibrate/send_cost.h"
#include "core/calibrate/stage_compute.h"
#include "core/events/event_json.h"
#include "core/job/job_plan.h"
#include "core/model/microbatch_profile.h"
#include "core/model/profile_retarget.h"
#include "core/model/profile_io.h"
#include "core/plan/microbatch_search.h"
#include "runtime/coordinator.h"
#include "runtime/profiler.h"

using namespace pw;
namespace fs = std::filesystem;

namespace {

int worker_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2); }

struct Measured {
  double iteration_ms = 0;
  std::vector<Event> events;
  Plan plan;
};

Measured run(JobSpec job, int iterations) {
  job.training.iterations = iterations;
  rt::RunOptions o;
  o.job = job;
  o.worker_binary = PW_WORKER_BIN;
  o.threads_per_worker = worker_threads();
  o.run_dir = (fs::temp_directory_path() / ("pw-bench-mb-" + std::to_string(getpid()))).string();
  rt::RunResult r = rt::run_job(o);
  Measured m;
  m.events = read_event_files(o.run_dir);
  fs::remove_all(o.run_dir);
  if (r.exit_code != 0) throw std::runtime_error("run failed: " + r.error);
  m.iteration_ms = r.iteration_ms;
  m.plan = r.plan;
  return m;
}

JobSpec at_size(JobSpec job, int b) {
  resolve_auto_microbatch(job, b);
  return job;
}

void use_profile(JobSpec& job, const std::string& file) {
  job.model.profile = file;
  job.raw["model"]["profile"] = file;
}

// A size's calibration run, added to its runs (the first one's plan is theirs).
void add(SizeRuns& runs, Measured m) {
  if (runs.events.empty()) runs.plan = m.plan;
  runs.add(std::move(m.events), m.iteration_ms);
}

// The job's cluster.* host costs fitted from its calibration runs by size
// with `profile_file` (the calibrated profile; core/calibrate/host_costs.h),
// applied to the spec and its document, and printed.
void fit_host_costs(JobSpec& job, const std::map<int, SizeRuns>& runs, const std::string& profile_file) {
  JobSpec with = job;
  use_profile(with, profile_file);
  const HostCosts costs = pw::fit_host_costs(with, runs);
  std::printf("host time per action:");
  for (const auto& h : costs.per_action)
    std::printf(" %.0f us at %d (gaps counted %.0f%s);", h.us, h.microbatch, h.counted.value_or(0), h.closed ? "" : ", not closed");
  std::printf("\n");
  apply_host_costs(job, costs);
}

// Where a size's error comes from: the measured runs taken apart as the
// calibration runs are (stage compute per microbatch; the host time per
// action that closes on their mean with the model's sends), beside what the
// new model read at that size. Diagnosis only: nothing is fitted from it.
void decompose(const JobSpec& new_job, const ModelProfile& calibrated, const std::map<int, SizeRuns>& checked,
               const std::string& profile_file) {
  std::printf("     the measured runs taken apart (held-out model / measured): stage compute per microbatch, fwd and bwd ms; "
              "host time per action\n");
  for (const auto& [b, runs] : checked) {
    const ModelProfile at = rescale_microbatch(calibrated, b);
    std::printf("  %7d ", b);
    for (const auto& st : runs.mean_compute()) {
      double fwd = 0, bwd = 0;
      for (int l = st.range.first_layer; l <= st.range.last_layer; ++l) fwd += at.layers[l].fwd_ms, bwd += at.layers[l].bwd_ms;
      std::printf(" stage %d %.2f/%.2f %.2f/%.2f;", st.device, fwd, st.fwd_ms, bwd, st.bwd_ms);
    }
    JobSpec with = at_size(new_job, b);
    use_profile(with, profile_file);
    const std::optional<double> closed = close_action_overhead_us(with, runs.plan, runs.mean_ms());
    const double read = action_overhead_at(new_job.cluster.device, b);
    if (closed)
      std::printf(" host %.0f/%.0f us\n", read, *closed);
    else
      std::printf(" host %.0f us/(does not close)\n", read);
  }
}

double predicted_ms(JobSpec job, int b, const std::string& profile_file) {
  job = at_size(job, b);
  use_profile(job, profile_file);
  return prepare_job(job).plan.iteration_time_ms;
}

void model(const char* label, JobSpec job, int iterations) {
  const std::vector<int> sizes = bench::quick_or<std::vector<int>>({2, 8}, {2, 4, 8, 16, 32});
  // Calibrated at every size (as `profile --in-situ` does for the sizes it
  // measures) and, held out, at these only: the others out of sample.
  const std::vector<int> held_in = bench::quick_or<std::vector<int>>({2, 8}, {2, 8, 32});
  const int base = job.training.microbatch_size;
  const int reps = bench::quick_or(2, 10);
  const std::string dir = fs::temp_directory_path().string();
  const std::string new_file = dir + "/pw-bench-mb-new.json", old_file = dir + "/pw-bench-mb-old.json",
                    held_file = dir + "/pw-bench-mb-held.json";

  // (a) every layer measured at every size; the stages calibrated in situ
  // (below).
  std::vector<ModelProfile> each;
  std::vector<int> measured_sizes = sizes;
  if (std::find(sizes.begin(), sizes.end(), base) == sizes.end()) measured_sizes.push_back(base);
  for (int b : measured_sizes) each.push_back(rt::measure_profile(at_size(job, b), {reps, worker_threads()}));
  ModelProfile tables = merge_microbatch_profiles(each, base);
  save_profile_file(tables, new_file);
  // (b) the old model: the job's size only, one scale factor per stage.
  ModelProfile single = rt::measure_profile(job, {reps, worker_threads()});
  save_profile_file(single, old_file);

  // The runs, in rounds, each size's calibration run beside its measured
  // one: this machine's speed drifts by 10-35% over minutes, and a model
  // calibrated at the start and checked at the end would measure the drift.
  // Calibration and measured runs are separate runs of the same job (the
  // measured ones fit nothing); the rounds are averaged.
  JobSpec probe = job, old_probe = job;
  use_profile(probe, new_file);
  use_profile(old_probe, old_file);
  const int rounds = bench::quick_or(1, 2);
  std::map<int, SizeRuns> calibration, old_calibration, checked;
  std::map<int, std::vector<double>> rounds_ms;
  for (int r = 0; r < rounds; ++r)
    for (int b : sizes) {
      add(calibration[b], run(at_size(probe, b), iterations));
      if (b == base) add(old_calibration[b], run(old_probe, iterations));
      Measured m = run(at_size(probe, b), iterations);
      rounds_ms[b].push_back(m.iteration_ms);
      add(checked[b], std::move(m));
    }
  if (std::find(sizes.begin(), sizes.end(), base) == sizes.end())
    for (int r = 0; r < rounds; ++r) add(old_calibration[base], run(old_probe, iterations));

  std::printf("1. %s, 2 stages 1f1b, batch %d (new model calibrated in situ at every size, and held out at", label,
              job.training.batch_size);
  for (int b : held_in) std::printf(" %d", b);
  std::printf(" only; the old model at %d; %d round(s))\n", base, rounds);
  std::map<int, SizeRuns> held_calibration;
  for (int b : held_in) held_calibration[b] = calibration.at(b);
  auto calibrate = [&](const std::map<int, SizeRuns>& runs, const std::string& file, JobSpec& into, const char* name) {
    std::map<int, std::vector<MeasuredStageCompute>> by_size;
    for (const auto& [b, at_b] : runs) by_size[b] = at_b.mean_compute();
    ModelProfile calibrated = calibrate_profile_at_sizes(tables, by_size);
    save_profile_file(calibrated, file);
    std::printf("     %s ", name);
    fit_host_costs(into, runs, file);
    return calibrated;
  };
  JobSpec new_job = job, held_job = job;
  calibrate(calibration, new_file, new_job, "new model's");
  const ModelProfile held_calibrated = calibrate(held_calibration, held_file, held_job, "held-out model's");
  save_profile_file(calibrate_profile(single, old_calibration[base].mean_compute()), old_file);
  JobSpec old_job = job;
  std::printf("     old model's ");
  fit_host_costs(old_job, old_calibration, old_file);

  std::printf("     size  microbatches   measured ms   new model         held out          old (linear) model   the measured runs\n");
  std::map<int, double> measured;
  double worst_new = 0, worst_held = 0, worst_old = 0;
  for (int b : sizes) {
    double meas = 0;
    std::string each;
    for (double ms : rounds_ms[b]) {
      meas += ms / static_cast<double>(rounds_ms[b].size());
      char one[16];
      std::snprintf(one, sizeof one, "%s%.1f", each.empty() ? "" : ", ", ms);
      each += one;
    }
    measured[b] = meas;
    const double pn = predicted_ms(new_job, b, new_file), ph = predicted_ms(held_job, b, held_file),
                 po = predicted_ms(old_job, b, old_file);
    const double en = 100 * (pn - meas) / meas, eh = 100 * (ph - meas) / meas, eo = 100 * (po - meas) / meas;
    worst_new = std::max(worst_new, std::abs(en));
    worst_held = std::max(worst_held, std::abs(eh));
    worst_old = std::max(worst_old, std::abs(eo));
    // A size's calibration runs are the same job run beside the measured
    // ones: how far they differ is the machine's drift, not the model's
    // error.
    char sample[96];
    std::snprintf(sample, sizeof sample, "; calibrated on runs of %.1f ms%s", calibration[b].mean_ms(),
                  held_calibration.count(b) ? "" : " (held out: out of sample)");
    std::printf("  %7d %13d %13.1f %9.1f (%+5.1f%%) %9.1f (%+5.1f%%) %9.1f (%+5.1f%%)    %s%s\n", b, job.training.batch_size / b,
                meas, pn, en, ph, eh, po, eo, each.c_str(), sample);
  }
  // The floor under any model's error here: how far one job's runs fall
  // apart (each size's runs, its calibration runs included).
  double spread = 0;
  for (int b : sizes) {
    std::vector<double> all = rounds_ms[b];
    if (calibration.count(b))
      for (double ms : calibration[b].iteration_ms) all.push_back(ms);
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    spread = std::max(spread, 100 * (*hi / *lo - 1));
  }
  std::printf("     worst error: new %.1f%% (target within 10%%), held out %.1f%%, old %.1f%%; one size's runs differ by up to %.1f%%\n",
              worst_new, worst_held, worst_old, spread);
  decompose(held_job, held_calibrated, checked, held_file);

  // 2. The size the planner chooses on the new model (and on the held-out one).
  double best = 1e300;
  int best_b = 0;
  for (auto [b, ms] : measured)
    if (ms < best) best = ms, best_b = b;
  auto choose = [&](const JobSpec& with, const std::string& file, const char* which) {
    JobSpec a = with;
    use_profile(a, file);
    a.training.microbatch_size_auto = true;
    PreparedJob chosen = prepare_job(a);
    const int cb = chosen.job.training.microbatch_size;
    if (measured.count(cb))
      std::printf("2. %s, %s: auto chose microbatch %d (%.1f ms measured); the sweep's best is %d (%.1f ms): %.3fx "
                  "(target <= 1.03)\n",
                  label, which, cb, measured[cb], best_b, best, measured[cb] / best);
    else
      std::printf("2. %s, %s: auto chose microbatch %d, outside the sweep; the sweep's best is %d (%.1f ms)\n", label,
                  which, cb, best_b, best);
    return chosen;
  };
  const PreparedJob chosen = choose(new_job, new_file, "new model");
  choose(held_job, held_file, "held-out model");
  const int cb = chosen.job.training.microbatch_size;

  // 3. Explain's rule on the chosen job: offered suggestions, run.
  const double chosen_ms = measured.count(cb) ? measured[cb] : run(chosen.job, iterations).iteration_ms;
  const double error = std::abs(chosen.plan.iteration_time_ms - chosen_ms) / chosen_ms;
  SuggestionReport rep = suggest_changes(chosen.job.raw, 5, error);
  std::printf("3. %s: model error on the chosen job %.1f%%; %zu suggestion(s) offered, %d withheld\n", label, 100 * error,
              rep.suggestions.size(), rep.withheld);
  for (const auto& s : rep.suggestions) {
    nlohmann::json doc = chosen.job.raw;
    for (const auto& o : s.overrides) apply_override(doc, o);
    JobSpec applied = parse_job(doc);
    const double ms = run(applied, iterations).iteration_ms;
    std::printf("     %s: predicted %.1f -> %.1f ms, ran %.1f -> %.1f ms: %s\n", s.change.c_str(), s.iteration_ms_before,
                s.iteration_ms_after, chosen_ms, ms, ms < chosen_ms ? "faster" : "NOT faster");
  }
  fs::remove(new_file);
  fs::remove(old_file);
  fs::remove(held_file);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // The CNN's iterations take 25-60 ms on 2 shared cores, where the mean of
  // 30 consecutive ones drifts by 15% over a few seconds (the host's load,
  // not the job): 150 iterations per run bring a run's mean within ~4% of
  // the next run's. The GPT's take ~0.45 s: 30 suffice.
  const int cnn_iterations = argc > 1 ? std::atoi(argv[1]) : bench::quick_or(3, 150);
  const int gpt_iterations = argc > 1 ? std::atoi(argv[1]) : bench::quick_or(3, 30);
  std::printf("pw_bench_microbatch (%d iterations per CNN run, %d per GPT run, %d threads per worker)\n\n",
              cnn_iterations, gpt_iterations, worker_threads());
  // Through --set overrides: the workers read the job document, not JobSpec.
  const std::string jobs = std::string(PW_SOURCE_DIR) + "/resources/jobs/";
  model("CNN demo", load_job(jobs + "demo-fmnist-cnn.json", {"training.batch_size=64", "training.microbatch_size=16"}),
        cnn_iterations);
  model("tiny GPT", load_job(jobs + "tiny-lm-4stage.json", {"training.batch_size=64", "training.microbatch_size=8",
                                                             "cluster.devices=2", "pipeline.stages=2"}),
        gpt_iterations);
  return 0;
}

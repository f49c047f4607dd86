#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/job_inputs.h"
#include "core/calibrate/send_cost.h"
#include "core/calibrate/microbatch_calibration.h"
#include "core/calibrate/host_costs.h"
#include "core/calibrate/stage_compute.h"
#include "core/events/event_json.h"
#include "core/io/checked_write.h"
#include "core/model/microbatch_profile.h"
#include "core/model/profile_io.h"
#include "core/plan/microbatch_search.h"
#include "core/spec/spec_bounds.h"
#include "runtime/coordinator.h"
#include "runtime/profiler.h"

namespace pw::cli {
namespace {

// "" for one run, " (21.50, 22.62)" for several: what the mean is of.
std::string each_run(const SizeRuns& r) {
  if (r.iteration_ms.size() < 2) return "";
  std::string text = " (";
  for (std::size_t i = 0; i < r.iteration_ms.size(); ++i) text += (i ? ", " : "") + fixed(r.iteration_ms[i], 2);
  return text + ")";
}

// Runs `probe` (the job at one size, on the profile just measured) for
// `iterations`, on `plan` where given (else the job's), and adds the run to
// `into`.
void run_in_situ(const JobSpec& probe, const std::optional<Plan>& plan, int iterations, int threads,
                 const std::string& profile_file, SizeRuns& into) {
  namespace fs = std::filesystem;
  const int b = probe.training.microbatch_size;
  const fs::path dir = fs::temp_directory_path() / ("pw-in-situ-" + std::to_string(getpid()) + "-" + std::to_string(b));
  JobSpec job = probe;
  job.training.iterations = iterations;
  job.model.profile = profile_file;
  rt::RunOptions o;
  o.job = job;
  o.plan = plan;
  o.threads_per_worker = threads;
  o.run_dir = dir.string();
  std::cerr << "calibrating in situ at microbatch " << b << ": " << iterations << " iterations on " << job.pipeline.stages
            << " stages...\n";
  rt::RunResult r = rt::run_job(o);
  std::vector<Event> events = read_event_files(o.run_dir);
  fs::remove_all(dir);
  const std::string at = "in-situ run at microbatch " + std::to_string(b);
  if (r.exit_code != 0) throw std::runtime_error(at + " failed: " + r.error);
  if (into.events.empty()) into.plan = r.plan;
  into.add(std::move(events), r.iteration_ms);
  if (into.compute.back().empty()) throw std::runtime_error(at + " recorded no forward or backward events");
}

// A fitted figure as the --set line prints it: 6 significant digits, so
// that planning with the line reproduces the model the fit closed (a send
// rate of 0.0094 Gbit/s printed as 0.009 moved a small job's prediction by
// 1%, which the closure's check in tests/runtime/cli_run.sh caught).
std::string significant(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The job's host costs (cluster.*) from its in-situ runs by size
// (core/calibrate/host_costs.h, with the calibrated profile), printed with
// the --set line that plans with them; the gaps counted beside each closed
// host time. Several sizes give a table.
ProfileHostCosts print_host_costs(const JobSpec& job, const ModelProfile& calibrated, const std::map<int, SizeRuns>& runs) {
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / ("pw-in-situ-" + std::to_string(getpid()) + "-calibrated.json");
  save_profile_file(calibrated, file.string());
  JobSpec with = job;
  with.model.profile = file.string();
  HostCosts costs;
  try {
    costs = fit_host_costs(with, runs);
  } catch (...) {
    fs::remove(file);
    throw;
  }
  fs::remove(file);
  std::string sets;
  if (const auto& send = costs.send) {
    std::cout << "  sends held their sender " << fixed(send->per_message_us, 0) << " us"
              << (send->gbps > 0 ? " + bytes at " + fixed(send->gbps, 2) + " Gbit/s" : std::string()) << "\n";
    sets += " --set cluster.send_cpu_us=" + significant(send->per_message_us) +
            " --set cluster.send_cpu_gbps=" + significant(send->gbps);
  }
  std::cout << "  host time per action (closed on the runs; the gaps between events counted):";
  for (std::size_t i = 0; i < costs.per_action.size(); ++i) {
    const auto& h = costs.per_action[i];
    std::cout << (i ? "," : "") << " " << fixed(h.us, 0) << " us (" << fixed(h.counted.value_or(0), 0) << ") at " << h.microbatch
              << (h.closed ? "" : " (does not close: the gaps counted)");
  }
  std::cout << "\n";
  if (costs.per_action.size() == 1) {
    sets += " --set cluster.action_overhead_us=" + significant(costs.per_action[0].us);
  } else if (!costs.per_action.empty()) {
    nlohmann::ordered_json table = nlohmann::ordered_json::object();
    for (const auto& h : costs.per_action) table[std::to_string(h.microbatch)] = std::stod(significant(h.us));
    sets += " --set 'cluster.action_overhead_us=" + table.dump() + "'";
  }
  if (!sets.empty())
    std::cout << "  stored in the profile: a job planning with it takes them (its own cluster fields win); as options,\n"
              << "  plan with" << sets << "\n";
  // Stored as printed (6 significant digits), so planning with the file and
  // planning with the printed line are the same plan.
  ProfileHostCosts stored;
  if (costs.send) {
    stored.send_cpu_us = std::stod(significant(costs.send->per_message_us));
    stored.send_cpu_gbps = std::stod(significant(costs.send->gbps));
  }
  for (const auto& h : costs.per_action) stored.action_overhead_us.emplace_back(h.microbatch, std::stod(significant(h.us)));
  return stored;
}

// `runs` in-situ runs of the job on the profile just measured (so its plan
// is the one the profile gives), the profile's compute scaled by what the
// stages took side by side, averaged over the runs. Prints the send cost
// and the per-action host time the runs showed, which are the job's
// (cluster.*), not the model's.
ModelProfile calibrate_in_situ(const JobSpec& job, const ModelProfile& isolated, int iterations, int runs, int threads,
                               const std::string& profile_file) {
  SizeRuns in_situ;
  // Every run on the first one's partition.
  for (int r = 0; r < runs; ++r)
    run_in_situ(job, r == 0 ? std::nullopt : std::optional<Plan>(in_situ.plan), iterations, threads, profile_file, in_situ);
  const auto measured = in_situ.mean_compute();
  ModelProfile p = calibrate_profile(isolated, measured);
  std::cout << "in situ (" << iterations << " iterations" << (runs > 1 ? " x " + std::to_string(runs) + " runs" : std::string())
            << ", " << fixed(in_situ.mean_ms(), 2) << " ms/iteration" << each_run(in_situ) << ")\n"
            << "  stage  layers   forward ms (profiled)   backward ms (profiled)   microbatches\n";
  for (size_t s = 0; s < measured.size(); ++s) {
    const auto& m = measured[s];
    double f = 0, b = 0;
    for (int l = m.range.first_layer; l <= m.range.last_layer; ++l) f += isolated.layers[l].fwd_ms, b += isolated.layers[l].bwd_ms;
    std::cout << pad(std::to_string(s), 7) << pad(std::to_string(m.range.first_layer) + "-" + std::to_string(m.range.last_layer), 8)
              << pad(fixed(m.fwd_ms, 3) + " (" + fixed(f, 3) + ")", 24) << pad(fixed(m.bwd_ms, 3) + " (" + fixed(b, 3) + ")", 25)
              << pad(std::to_string(m.microbatches), 15) << "\n";
  }
  p.host_costs = print_host_costs(job, p, {{job.training.microbatch_size, std::move(in_situ)}});
  return p;
}

// In-situ runs at every size of `sizes`, `rounds` times over in turns (a
// drift of the machine's speed then weighs on every size alike), one
// partition for all (the first run's plan), and the profile's tables
// calibrated per stage and size.
ModelProfile calibrate_in_situ_at_sizes(const JobSpec& job, const ModelProfile& isolated, const std::vector<int>& sizes,
                                        int iterations, int rounds, int threads, const std::string& profile_file) {
  std::map<int, SizeRuns> runs;
  std::optional<Plan> plan;
  for (int r = 0; r < rounds; ++r)
    for (int b : sizes) {
      JobSpec probe = job;
      resolve_auto_microbatch(probe, b);
      SizeRuns& at = runs[b];
      run_in_situ(probe, plan, iterations, threads, profile_file, at);
      if (!plan) plan = at.plan;
    }
  std::map<int, std::vector<MeasuredStageCompute>> by_size;
  for (const auto& [b, r] : runs) by_size[b] = r.mean_compute();
  std::vector<StageSizeFit> fits;
  ModelProfile p = calibrate_profile_at_sizes(isolated, by_size, &fits);
  std::cout << "in situ at " << sizes.size() << " microbatch sizes (" << iterations << " iterations"
            << (rounds > 1 ? " x " + std::to_string(rounds) + " runs" : std::string()) << " each)\n"
            << "  size   ms/iteration\n";
  for (const auto& [b, r] : runs) std::cout << pad(std::to_string(b), 6) << pad(fixed(r.mean_ms(), 2), 15) << each_run(r) << "\n";
  std::cout << "  stage  layers   forward ms per microbatch         backward ms per microbatch\n";
  for (std::size_t s = 0; s < fits.size(); ++s) {
    const auto& f = fits[s];
    std::cout << pad(std::to_string(s), 7) << pad(std::to_string(f.range.first_layer) + "-" + std::to_string(f.range.last_layer), 8)
              << "   " << fixed(f.fwd_fit.alpha_ms, 3) << " + " << fixed(f.fwd_fit.beta_ms, 4) << " x b"
              << "             " << fixed(f.bwd_fit.alpha_ms, 3) << " + " << fixed(f.bwd_fit.beta_ms, 4) << " x b\n";
  }
  p.host_costs = print_host_costs(job, p, runs);
  return p;
}

// "1,2,4,8": distinct sizes, each in [1, the bound], increasing.
std::vector<int> parse_sizes(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int v = 0;
    try {
      std::size_t used = 0;
      v = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UsageError("--microbatch-sizes: \"" + item + "\" is not an integer (expected e.g. 1,2,4,8)");
    }
    if (v < 1 || v > bounds::kMicrobatchSize)
      throw UsageError("--microbatch-sizes: " + std::to_string(v) + " is outside [1, " + std::to_string(bounds::kMicrobatchSize) + "]");
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) throw UsageError("--microbatch-sizes: no size given");
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) throw UsageError("--microbatch-sizes: a size is repeated");
  return out;
}

struct ProfileArgs {
  std::string job_file, output, sizes, device = rt::ProfileOptions().device;
  std::vector<std::string> overrides;
  int repeats = rt::ProfileOptions().repeats, threads = 0, in_situ = 0, in_situ_runs = 1;
  bool overwrite = false;
};

int profile(const ProfileArgs& args) {
  JobSpec job = load_job(args.job_file, args.overrides);
  const std::string& out = args.output;
  rt::ProfileOptions po;
  po.repeats = args.repeats;
  po.threads = args.threads;
  po.device = args.device;
  c10::Device device(c10::kCPU);
  try {
    device = rt::profile_device(args.device);  // refused before anything is measured
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--device: ") + e.what());
  }
  std::cerr << "measuring on " << device.str() << "\n";
  const int in_situ = args.in_situ;
  if (in_situ > 0 && !job.search_space.is_null()) throw UsageError("--in-situ calibrates pipeline jobs, not supernet jobs");
  if (args.in_situ_runs > 1 && in_situ == 0) throw UsageError("--in-situ-runs: runs of what? give --in-situ ITERATIONS too");
  // Checked before measuring (a refused file is not found out minutes later),
  // written beside the target, moved into place under the output rule.
  const std::vector<InputFile> inputs = job_inputs(args.job_file, job);  // never replaced by -o
  auto save = [&](const ModelProfile& p, bool overwrite) {
    OutputByOther file({out, "-o", overwrite, inputs});
    save_profile_file(p, file.temp_path());
    file.place();
  };
  check_output({out, "-o", args.overwrite, inputs});
  std::vector<int> sizes;
  if (!args.sizes.empty()) {
    sizes = parse_sizes(args.sizes);
    // The job's own size is the profile's base: measured too.
    if (!job.training.microbatch_size_auto && !std::binary_search(sizes.begin(), sizes.end(), job.training.microbatch_size)) {
      sizes.push_back(job.training.microbatch_size);
      std::sort(sizes.begin(), sizes.end());
    }
  }
  ModelProfile p;
  if (sizes.empty()) {
    p = rt::measure_profile(job, po);
  } else {
    std::vector<ModelProfile> measured;
    for (int b : sizes) {
      std::cerr << "measuring every layer at microbatch " << b << "...\n";
      JobSpec at = job;
      resolve_auto_microbatch(at, b);
      measured.push_back(rt::measure_profile(at, po));
    }
    const int base = job.training.microbatch_size_auto ? sizes.back() : job.training.microbatch_size;
    p = merge_microbatch_profiles(measured, base);
  }
  save(p, args.overwrite);
  std::cout << "profile of " << job.name << " (" << p.size() << " layers, microbatch " << p.microbatch_size
            << (sizes.size() > 1 ? ", tables at " + args.sizes : std::string()) << ") written to " << out
            << "\n  layer          fwd ms    bwd ms   activations      params\n";
  for (const auto& l : p.layers)
    std::cout << "  " << l.name << std::string(l.name.size() < 12 ? 12 - l.name.size() : 1, ' ')
              << pad(fixed(l.fwd_ms, 3), 9) << pad(fixed(l.bwd_ms, 3), 10) << pad(gib(l.activation_bytes), 14)
              << pad(gib(l.param_bytes), 12) << "\n";
  if (in_situ > 0 && sizes.size() > 1) {
    p = calibrate_in_situ_at_sizes(job, p, sizes, in_situ, args.in_situ_runs, po.threads, out);
    save(p, true);  // replaces the file written above, its own
    std::cout << "calibrated profile written to " << out << "\n";
  } else if (in_situ > 0) {
    p = calibrate_in_situ(job, p, in_situ, args.in_situ_runs, po.threads, out);
    save(p, true);  // replaces the file written above, its own
    std::cout << "calibrated profile written to " << out << "\n";
  }
  return 0;
}
}  // namespace

Action define_profile(Args& args) {
  auto a = std::make_shared<ProfileArgs>();
  args.positional("JOB.json", a->job_file, "the job file");
  args.output("-o,--output", a->output, "FILE", "the profile file to write");
  args.required("-o");
  args.overwrite(a->overwrite);
  args.integer("--repeats", a->repeats, 1, 1'000'000, "N",
               "timed runs of each layer (default " + std::to_string(a->repeats) + ")");
  args.integer("--threads", a->threads, 1, 1024, "N", "intra-op threads (default: libtorch's)");
  args.text("--device", a->device, "auto|cpu|cuda",
            "where the layers are measured (default auto: a GPU where libtorch sees one, as a stage computes)");
  args.integer("--in-situ", a->in_situ, 2, 1'000'000, "ITERATIONS",
               "then calibrate the compute by a run this long (the first iteration is not measured); with "
               "--microbatch-sizes, one run per size");
  args.integer("--in-situ-runs", a->in_situ_runs, 1, 100, "N",
               "runs of each size, in turns, the calibration fitting their mean (default 1; on a shared machine "
               "one job's runs can differ by 10-40% minutes apart)");
  args.text("--microbatch-sizes", a->sizes, "B1,B2,...",
            "measure every layer at each of these microbatch sizes (and the job's own): the profile keeps the "
            "table and the planner reads any size from it");
  args.overrides(a->overrides);
  return [a] { return profile(*a); };
}

}  // namespace pw::cli

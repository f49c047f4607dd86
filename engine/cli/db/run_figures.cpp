#include "cli/db/run_figures.h"

#include <algorithm>
#include <limits>

#include "core/events/bubble.h"
#include "core/spec/job_spec.h"
#include "db/run_reader.h"

namespace pw::cli {

nlohmann::json run_figures(const db::RunReader& r) {
  const auto& run = r.run();
  nlohmann::json j;
  j["file"] = r.path();
  j["run_id"] = run.run_id;
  j["name"] = run.name;
  j["source"] = run.source;
  j["status"] = to_string(run.status);
  j["reason"] = run.reason;
  j["schema"] = run.schema_version;
  j["started_unix_ns"] = run.started_unix_ns;
  j["ended_unix_ns"] = run.ended_unix_ns;

  auto job = r.job();
  if (job.is_object()) {
    nlohmann::json jj;
    for (const char* k : {"name"})
      if (job.contains(k)) jj[k] = job[k];
    if (job.contains("model") && job["model"].contains("kind")) jj["model"] = job["model"]["kind"];
    if (job.contains("pipeline")) jj["pipeline"] = job["pipeline"];
    // Derived figures (microbatches from the batch size) as the producer saw them.
    auto sum = r.summary();
    if (sum.is_object() && sum.contains("microbatches")) {
      jj["pipeline"]["microbatches"] = sum["microbatches"];
    } else if (jj.contains("pipeline")) {
      // A real run's summary does not carry it: derive it as the engine did.
      try {
        jj["pipeline"]["microbatches"] = parse_job(job).pipeline.microbatches;
      } catch (const std::exception&) {
        // A job this build no longer accepts: keep what the file says.
      }
    }
    if (job.contains("cluster")) jj["cluster"] = job["cluster"];
    j["job"] = jj;
  }
  auto plans = r.plans();
  j["plans"] = plans.size();
  if (!plans.empty()) {
    const auto& p = plans.back().plan;
    j["planner"] = p.value("planner", "");
    nlohmann::json ranges = nlohmann::json::array();
    if (p.contains("stages"))
      for (const auto& s : p["stages"]) ranges.push_back(s);
    j["plan_stages"] = ranges;
  }

  auto tp = r.throughput();
  j["throughput_samples"] = tp.size();
  if (!tp.empty()) {
    j["throughput_samples_per_s"] = tp.back().samples_per_s;
    // The mean over the run: the last sample alone is one iteration's
    // interval, which next to a steady-state throughput reads as a contradiction.
    double sum = 0;
    int n = 0;
    for (const auto& t : tp)
      if (t.iteration_ms > 0) sum += t.iteration_ms, ++n;
    j["iteration_time_ms"] = n ? sum / n : tp.back().iteration_ms;
  } else {
    j["throughput_samples_per_s"] = nullptr;
    j["iteration_time_ms"] = nullptr;
  }

  // The (stages, replicas) split the run trained with, from its last plan
  // (the simulator records one replica of several); the job's or the
  // recorded replicas where no plan says.
  const int recorded_replicas = r.replicas();
  int split_stages = run.stages, split_replicas = recorded_replicas, split_tensor = 1;
  if (!plans.empty() && plans.back().plan.contains("parallel") && plans.back().plan["parallel"].is_object()) {
    const auto& par = plans.back().plan["parallel"];
    split_stages = par.value("stages", split_stages);
    split_replicas = std::max(par.value("data", split_replicas), 1);
    split_tensor = std::max(par.value("tensor", 1), 1);
  } else if (job.is_object() && job.contains("parallel") && job["parallel"].is_object() &&
             job["parallel"].contains("data") && job["parallel"]["data"].is_number_integer()) {
    split_replicas = std::max(job["parallel"]["data"].get<int>(), 1);
  }
  j["parallel"] = {{"tensor", split_tensor},
                   {"stages", split_stages},
                   {"replicas", split_replicas},
                   {"recorded_replicas", recorded_replicas}};
  // Samples per second over every replica: the global batch (split among
  // the replicas) per mean iteration, so runs of different splits compare
  // on the same figure whatever each producer's throughput sample counts.
  const bool has_batch = job.is_object() && job.contains("training") && job["training"].is_object() &&
                         job["training"].contains("batch_size") && job["training"]["batch_size"].is_number();
  if (has_batch && j["iteration_time_ms"].is_number() && j["iteration_time_ms"].get<double>() > 0)
    j["samples_per_s"] = job["training"]["batch_size"].get<double>() / (j["iteration_time_ms"].get<double>() / 1e3);
  else
    j["samples_per_s"] = j["throughput_samples_per_s"];

  auto stats = r.stage_stats();
  std::uint64_t events = 0;
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  std::int64_t busy = 0, dur = 0, bytes = 0;
  std::array<std::uint64_t, kEventKindCount> kinds{};
  for (const auto& s : stats) {
    if (s.events == 0) continue;
    events += s.events;
    first = std::min(first, s.first_start_ns);
    last = std::max(last, s.last_end_ns);
    busy += s.busy_ns;
    dur += s.duration_ns;
    bytes += s.bytes;
    for (int k = 0; k < kEventKindCount; ++k) kinds[k] += s.by_kind[k];
  }
  std::int64_t span = events ? last - first : 0;
  j["events"] = events;
  j["first_start_ns"] = events ? nlohmann::json(first) : nlohmann::json(nullptr);
  j["last_end_ns"] = events ? nlohmann::json(last) : nlohmann::json(nullptr);
  j["span_ns"] = span;
  j["duration_sum_ns"] = dur;
  j["busy_sum_ns"] = busy;
  j["bytes"] = bytes;
  nlohmann::json by_kind = nlohmann::json::object();
  for (int k = 0; k < kEventKindCount; ++k)
    if (kinds[k]) by_kind[to_string(static_cast<EventKind>(k))] = kinds[k];
  j["events_by_kind"] = by_kind;
  int nstages = std::max<int>(run.stages, static_cast<int>(stats.size()));
  // Bubble over the recorded span; every recorded replica's stage s is its
  // own device, all of them in the busy sums.
  j["bubble_fraction"] = bubble_fraction(static_cast<double>(busy), nstages * recorded_replicas, static_cast<double>(span));
  nlohmann::json st = nlohmann::json::array();
  for (const auto& s : stats)
    st.push_back({{"stage", s.stage},
                  {"events", s.events},
                  {"busy_ns", s.busy_ns},
                  {"busy_fraction", busy_fraction(static_cast<double>(s.busy_ns), static_cast<double>(span) * recorded_replicas)},
                  {"first_start_ns", s.first_start_ns},
                  {"last_end_ns", s.last_end_ns},
                  {"bytes", s.bytes},
                  // Communication, neither compute (busy) nor idle: the
                  // replicas' gradient all-reduce and the tensor group's.
                  {"gradient_allreduce_ns", s.kind_ns[static_cast<int>(EventKind::AllReduce)]},
                  {"tensor_allreduce_ns", s.kind_ns[static_cast<int>(EventKind::TensorAllReduce)]},
                  {"peak_memory_bytes", s.peak_memory_bytes}});
  j["stages"] = st;

  auto mig = r.migrations();
  std::int64_t mig_bytes = 0;
  for (const auto& m : mig) mig_bytes += m.bytes;
  j["migrations"] = {{"count", mig.size()}, {"bytes", mig_bytes}};
  j["subnet_edges"] = r.subnet_edges().size();
  j["logs"] = r.logs().size();
  auto summary = r.summary();
  if (!summary.is_null()) j["recorded_summary"] = summary;
  return j;
}

}  // namespace pw::cli

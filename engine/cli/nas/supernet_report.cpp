#include "cli/nas/supernet_report.h"

#include <algorithm>
#include <filesystem>

#include "cli/format.h"
#include "core/nas/cache_prediction.h"
#include "core/nas/subnet_records.h"

namespace pw::cli {

SupernetRunReport supernet_run_report(const nas::NasJob& nj, const JobSpec& job, const rt::nas::CspRunResult& r,
                                      const std::string& run_dir, int states, int edges) {
  SupernetRunReport rep;
  const auto active = nas::stage_cache_active(nj);
  // The device cache: what each stage measured beside what the simulator
  // predicts for the same sequence and budget (counts equal, stalls not).
  if (std::find(active.begin(), active.end(), true) != active.end())
    rep.device_cache = nas::device_cache_record(nas::predict_device_cache(nj), nas::stage_capacities(nj), r.device_cache);
  nlohmann::json hashes = nlohmann::json::array();
  for (auto h : r.stage_hashes) hashes.push_back(std::to_string(h));
  rep.summary = {{"subnets", r.subnets},
                 {"start_subnet", r.start_subnet},
                 {"stopped", r.stopped},
                 {"seconds", r.seconds},
                 {"subnets_per_s", r.subnets_per_s()},
                 {"samples_per_s", r.subnets_per_s() * job.training.batch_size},
                 {"losses", r.losses},
                 {"stage_hashes", hashes},
                 {"run_dir", std::filesystem::absolute(run_dir).lexically_normal().string()},
                 {"recorded_subnet_states", states},
                 {"recorded_wait_edges", edges},
                 {"device_cache", rep.device_cache}};
  return rep;
}

namespace {
void print_cache_table(std::ostream& out, const nas::NasJob& nj, const nlohmann::json& cache) {
  out << "\n  device cache (" << cache["eviction"].get<std::string>() << ", budget "
      << fixed(nj.budget_bytes / (1024.0 * 1024), 2) << " MiB per stage): measured / predicted\n"
      << "  stage    capacity   uses              hits             loads        MiB loaded     load stall ms\n";
  for (const auto& st : cache["stages"]) {
    const auto& m = st["measured"];
    const auto& pr = st["predicted"];
    // digits < 0: a count; 0: bytes shown in MiB; 1: milliseconds.
    auto pair = [&](const char* k, int digits) {
      auto value = [&](const nlohmann::json& v) {
        return digits < 0 ? std::to_string(v[k].get<std::uint64_t>())
                          : fixed(v[k].get<double>() / (digits ? 1.0 : 1024.0 * 1024), 2);
      };
      return pad((m.is_null() ? std::string("-") : value(m)) + " / " + value(pr), 18);
    };
    out << pad(std::to_string(st["stage"].get<int>()), 7) << "  "
        << pad(fixed(st["capacity_bytes"].get<double>() / (1024.0 * 1024), 2) + " MiB", 10)
        << pad(std::to_string(pr["uses"].get<std::uint64_t>()), 6) << "  " << pair("hits", -1) << pair("loads", -1)
        << pair("load_bytes", 0) << pair("stall_ms", 1) << (m.is_null() ? "  (whole slice resident: no cache)" : "")
        << "\n";
  }
}
}  // namespace

void print_supernet_run(std::ostream& out, const nas::NasJob& nj, const rt::nas::CspRunResult& r,
                        const SupernetRunReport& report) {
  out << (r.stopped ? "stopped on request: " : "done: ") << r.subnets << " subnets"
      << (r.start_subnet > 0 ? " (resumed at subnet " + std::to_string(r.start_subnet) + ")" : std::string()) << " in "
      << fixed(r.seconds, 2) << " s, " << fixed(r.subnets_per_s(), 2) << " subnets/s";
  if (!r.losses.empty()) out << ", loss " << fixed(r.losses.front(), 4) << " -> " << fixed(r.losses.back(), 4);
  if (!report.device_cache.is_null()) print_cache_table(out, nj, report.device_cache);
}

}  // namespace pw::cli

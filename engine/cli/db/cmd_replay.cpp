#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/db/run_figures.h"
#include "cli/format.h"
#include "cli/db/recording.h"
#include "db/run_reader.h"

namespace pw::cli {
namespace {

std::string ms(std::int64_t ns) { return fixed(ns / 1e6, 3) + " ms"; }

void print_human(const nlohmann::json& f) {
  std::cout << "run " << f["run_id"].get<std::string>() << " (" << f["source"].get<std::string>() << ") of job "
            << f["name"].get<std::string>() << ": " << f["status"].get<std::string>();
  if (!f["reason"].get<std::string>().empty()) std::cout << " (" << f["reason"].get<std::string>() << ")";
  std::cout << "\n  file " << f["file"].get<std::string>() << ", schema " << f["schema"].get<std::string>() << "\n";
  if (f.contains("job")) {
    const auto& j = f["job"];
    std::cout << "  job        " << j.value("model", "?");
    if (j.contains("pipeline"))
      std::cout << ", " << j["pipeline"].value("stages", 0) << " stages, " << j["pipeline"].value("schedule", "?") << ", "
                << j["pipeline"].value("microbatches", 0) << " microbatches";
    std::cout << "\n";
  }
  if (f["parallel"]["replicas"].get<int>() > 1)
    std::cout << "  parallel   " << f["parallel"]["stages"] << " stages x " << f["parallel"]["replicas"] << " replicas ("
              << f["parallel"]["recorded_replicas"] << " recorded)\n";
  if (f.contains("planner"))
    std::cout << "  plan       " << f["planner"].get<std::string>() << " (" << f["plans"] << " version"
              << (f["plans"].get<int>() == 1 ? "" : "s") << ")\n";
  if (!f["throughput_samples_per_s"].is_null())
    std::cout << "  throughput " << fixed(f["throughput_samples_per_s"].get<double>(), 1) << " samples/s, iteration "
              << fixed(f["iteration_time_ms"].get<double>(), 2) << " ms\n";
  std::cout << "  events     " << f["events"] << " over " << ms(f["span_ns"].get<std::int64_t>()) << "\n";
  std::cout << "  bubble     " << pct(f["bubble_fraction"].get<double>()) << " of the recorded span\n";
  std::cout << "  migrations " << f["migrations"]["count"] << " (" << gib(f["migrations"]["bytes"].get<std::uint64_t>())
            << ")\n\n";
  std::cout << "  stage   events       busy   busy ms     peak memory\n";
  for (const auto& s : f["stages"])
    std::cout << pad(std::to_string(s["stage"].get<int>()), 7) << pad(std::to_string(s["events"].get<std::uint64_t>()), 9)
              << pad(pct(s["busy_fraction"].get<double>()), 11) << pad(fixed(s["busy_ns"].get<std::int64_t>() / 1e6, 2), 10)
              << pad(gib(s["peak_memory_bytes"].get<std::uint64_t>()), 16) << "\n";
}

}  // namespace

Action define_replay(Args& args) {
  struct A {
    std::string db;
    bool json = false;
  };
  auto a = std::make_shared<A>();
  args.positional("RUN.sqlite", a->db, "the run database");
  args.json(a->json);
  return [a] {
    db::RunReader r(a->db);
    return interpret_recording(a->db, [&] {
      auto f = run_figures(r);
      if (a->json)
        std::cout << f.dump(2) << "\n";
      else
        print_human(f);
      return 0;
    });
  };
}

}  // namespace pw::cli

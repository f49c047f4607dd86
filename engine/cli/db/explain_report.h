#pragma once
#include <nlohmann/json.hpp>
#include <cstddef>
#include <optional>

namespace pw {
struct ExplainReport;
}
namespace pw::db {
class RunReader;
}

namespace pw::cli {

struct ExplainOptions {
  std::optional<int> iteration;          // default: the last complete one
  std::optional<double> threshold_ms;    // predicted vs measured; default 5% of the predicted iteration
  bool suggestions = true;
  int replica = 0;  // which data-parallel replica's pipeline is explained
};

// `pipewright explain`'s report on a recorded run (docs/explain.md): per
// stage and cause, the critical path, predicted vs measured (when the run
// recorded its job, plan and profile) and simulated suggestions.
// Core's report (core/analysis/explain_report.h) of the replica's events.
nlohmann::json explain_run(const db::RunReader& run, const ExplainOptions& opt);

// The report as `explain --json` writes it, with the run's identity.
nlohmann::json explain_json(const db::RunReader& run, const ExplainReport& report, int replica, int recorded_replicas,
                            int planned_replicas, std::size_t event_count);

}  // namespace pw::cli

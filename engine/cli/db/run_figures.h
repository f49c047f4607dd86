#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace pw::db {
class RunReader;
}

namespace pw::cli {

// The figures `replay` prints and `compare` sets side by side, computed
// from what the run recorded (events, memory, throughput, migrations), not
// from the producer's own summary (which is included as "recorded_summary").
nlohmann::json run_figures(const db::RunReader& run);

}  // namespace pw::cli

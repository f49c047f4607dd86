#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/nas/nas_job.h"
#include "core/spec/job_spec.h"
#include "runtime/nas/csp_launch.h"

namespace pw::cli {

// What a finished (or stopped) supernet run reports: the summary recorded
// with it and printed by --json, and the terminal's lines.
struct SupernetRunReport {
  nlohmann::json summary;
  nlohmann::json device_cache;  // measured beside predicted per stage; null where no stage had a cache
};

// `run_dir` absolute in the summary: `pipewright search RUN.sqlite` finds
// the weights from anywhere. `states`/`edges`: what the recorder took.
SupernetRunReport supernet_run_report(const nas::NasJob& nj, const JobSpec& job, const rt::nas::CspRunResult& r,
                                      const std::string& run_dir, int states, int edges);

// "done: N subnets ...", or "stopped on request: ...", and the device
// cache's measured / predicted table where a stage had one.
void print_supernet_run(std::ostream& out, const nas::NasJob& nj, const rt::nas::CspRunResult& r,
                        const SupernetRunReport& report);

}  // namespace pw::cli

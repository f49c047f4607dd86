// The job parser as the CLI drives it: a job document, then `--set`
// overrides (one per line after a NUL byte), then what `plan` and
// `simulate` do with an accepted job. A SpecError (exit 2 naming the path)
// is the only allowed refusal; any other exception, a crash or a sanitizer
// report is a finding.
#include <cstdint>

#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text = pw::fuzz::text_of(data, size);
  auto overrides = pw::fuzz::lines_after_nul(text);
  try {
    pw::JobSpec job = pw::job_from_text(text, ".", overrides);
    // Supernet jobs go through the NAS layer (fuzzed with its own readers);
    // measured profiles name files, which a fuzzer should not wander.
    if (!job.search_space.is_null() || !job.model.profile.empty()) return 0;
    pw::PreparedJob p = pw::prepare_job(job);
    (void)pw::simulate(p.sim_input());
  } catch (const pw::SpecError&) {
  }
  return 0;
}

// `--set` overrides as a command applies them (core/spec/override.h): each
// line of the input is one assignment, applied in order to a small valid
// job, and the job is then parsed. A SpecError is the only refusal allowed.
// An accepted override must leave a document a job file could be:
// - at most kMaxJsonDepth levels deep, measured without recursion (a
//   60,000-part key once built a 60,000-deep document whose copy overflowed
//   the stack; this finds an unbounded key at 65 parts, in any stack);
// - dumpable: every string UTF-8 (nlohmann's dump throws type_error.316
//   otherwise, which `simulate --db` once died of, leaving a recording).
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/spec/bounded_json.h"
#include "core/spec/job_spec.h"
#include "core/spec/override.h"
#include "core/spec/spec_error.h"
#include "fuzz_input.h"

namespace {
const char* kJob = R"({
  "name": "fuzz",
  "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1},
  "training": {"batch_size": 16, "microbatch_size": 2},
  "cluster": {"devices": 4, "device": "v100-32g"},
  "pipeline": {"stages": 4}
})";

void check_document(const nlohmann::json& doc) {
  if (pw::json_depth(doc) > pw::kMaxJsonDepth) std::abort();  // deeper than a job file may be
  try {
    (void)doc.dump();
  } catch (const nlohmann::json::exception&) {
    std::abort();  // a string that is not UTF-8 got in
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const nlohmann::json base = nlohmann::json::parse(kJob);
  std::string text = pw::fuzz::text_of(data, size);
  nlohmann::json doc = base;
  std::size_t pos = 0;
  for (int n = 0; pos <= text.size() && n < 64; ++n) {
    auto nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
    const nlohmann::json before = doc;
    try {
      pw::apply_override(doc, line);
    } catch (const pw::SpecError&) {
      if (doc != before) std::abort();  // a refused override changed the document
      continue;
    }
    check_document(doc);
  }
  try {
    pw::JobSpec job = pw::parse_job(doc);
    check_document(job.raw);
  } catch (const pw::SpecError&) {
  }
  return 0;
}

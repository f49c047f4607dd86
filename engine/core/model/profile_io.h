#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/model/layer_profile.h"

namespace pw {

// Pipewright's own profile format (JSON): {"format": "pipewright-profile",
// "version": 2, "microbatch_size", "device", "source", "layers": [...] (each
// with an optional "by_microbatch" table of sizes measured, fixed parts and
// tensor count; version 1 files lack them and read as linear),
// "host_costs" (optional: what `profile --in-situ` fitted, profile_host_costs.h),
// "cut_bytes": [...]}.
nlohmann::json profile_to_json(const ModelProfile& p);
ModelProfile profile_from_json(const nlohmann::json& j);

// Reads a profile file: Pipewright JSON, or PipeDream's graph.txt.
// `microbatch_size` rescales per-minibatch figures where the file was
// measured at another size. Throws std::runtime_error naming the file and
// line for malformed input.
// The file's kind is told from its content ('{' starts JSON). A
// microbatch_size <= 0 keeps the figures as measured. What was assumed
// (profiled minibatch, scaling) is appended to `assumptions`.
ModelProfile load_profile_file(const std::string& path, int microbatch_size);
// Same, from text already read; `name` is used in error messages.
ModelProfile profile_from_text(const std::string& text, const std::string& name, int microbatch_size);
void save_profile_file(const ModelProfile& p, const std::string& path);
// PipeDream's graph.txt (see core/model/pipedream_graph.h for what the
// format keeps: no optimizer state, activation_size = output bytes).
void save_profile_pipedream(const ModelProfile& p, const std::string& path);

}  // namespace pw

#pragma once
// `--set a.b.c=value`: the one way a command line changes a job document
// (every command that reads a job, the studio's simulated suggestions).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/spec/utf8.h"  // is_valid_utf8

namespace pw {

// Applies "a.b.c=value" to a document. The value is parsed as JSON when it
// is valid JSON (numbers, true, objects) and taken as a string otherwise;
// a number beyond double range (1e400) is refused naming the key.
//
// Everything is checked before the document changes, so that the document
// stays what a job file may be (core/spec/bounded_json.h):
// - the key has at most kMaxJsonDepth parts, and its parts plus the value's
//   own nesting make at most kMaxJsonDepth levels: nothing later (a copy, a
//   comparison, a dump: all recursive in nlohmann::json) recurses deeper than
//   a file could make it (a 60,000-part key once overflowed the stack);
// - key and value are well-formed UTF-8 (every text of a job is: the run
//   database, telemetry and --json write it as JSON), so raw bytes never
//   reach an output, a message or a database.
// Throws SpecError: at path "--set" for a malformed key (no '=', an empty
// part, too many parts, not UTF-8), at the key's path for its value.
void apply_override(nlohmann::json& doc, const std::string& assignment);

// How deeply `j` nests: 0 for a scalar, 1 for [] or {} of scalars, ...
// Computed with an explicit stack: safe on a document of any depth.
int json_depth(const nlohmann::json& j);

}  // namespace pw

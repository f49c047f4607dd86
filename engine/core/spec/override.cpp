#include "core/spec/override.h"

#include <algorithm>
#include <vector>

#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"
#include "core/spec/utf8.h"

namespace pw {

using json = nlohmann::json;

int json_depth(const json& j) {
  int deepest = 0;
  std::vector<std::pair<const json*, int>> stack{{&j, 0}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return deepest;
}

void apply_override(json& doc, const std::string& assignment) {
  const auto eq = assignment.find('=');
  const std::string key = assignment.substr(0, eq);
  std::size_t bad = 0;
  // Checked before the key is echoed in any message: raw bytes are never.
  if (!is_valid_utf8(key, &bad))
    throw SpecError("--set", "the key is not valid UTF-8 (" + utf8_error_at(key, bad) + "): a job's fields are named in UTF-8");
  if (eq == std::string::npos) throw SpecError("--set", "expected key.path=value, got \"" + key + "\"");
  if (eq == 0) throw SpecError("--set", "expected key.path=value: the key is empty");
  // Each part of the key is a level of the document: bounded as a file's
  // nesting is, before anything is built from it.
  const auto parts = static_cast<std::size_t>(std::count(key.begin(), key.end(), '.')) + 1;
  if (parts > static_cast<std::size_t>(kMaxJsonDepth))
    throw SpecError("--set", "the key has " + std::to_string(parts) + " parts; at most " +
                                 std::to_string(kMaxJsonDepth) + " (a job document nests at most " +
                                 std::to_string(kMaxJsonDepth) + " levels): \"" + clip_for_message(key, 80) + "\"");
  std::vector<std::string> path;
  path.reserve(parts);
  for (std::size_t pos = 0;;) {
    const auto dot = key.find('.', pos);
    path.push_back(key.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos));
    if (path.back().empty()) throw SpecError("--set", "empty path component in \"" + key + "\"");
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  const std::string text = assignment.substr(eq + 1);
  if (!is_valid_utf8(text, &bad))
    throw SpecError(key, "the value given by --set is not valid UTF-8 (" + utf8_error_at(text, bad) +
                             " of the value): every text of a job is UTF-8");
  // The value nests below the key's parts: together no deeper than a file.
  const int value_depth = kMaxJsonDepth - static_cast<int>(parts);
  json value;
  try {
    value = parse_bounded_json(text, key, value_depth);
  } catch (const SpecError& e) {
    if (e.reason().rfind("nested deeper than", 0) == 0)
      throw SpecError(e.path(), "the value given by --set is nested too deep: the key's " + std::to_string(parts) +
                                    " parts and the value nest at most " + std::to_string(kMaxJsonDepth) +
                                    " levels together, as in a job file");
    // Not JSON: a bare string (name=my-job). Out of range: refused.
    if (e.reason().rfind("not valid JSON", 0) != 0) throw;
    value = text;
  }
  json* node = &doc;
  std::string walked;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const std::string& part = path[i];
    walked += (walked.empty() ? "" : ".") + part;
    if (!node->is_object()) throw SpecError(walked, "cannot set a field inside a non-object");
    if (i + 1 == path.size()) {
      (*node)[part] = std::move(value);
      return;
    }
    node = &(*node)[part];
    if (node->is_null()) *node = json::object();
  }
}

}  // namespace pw

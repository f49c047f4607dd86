#include "core/spec/override.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

using json = nlohmann::json;

// "byte 3 is 0xff": where a text stops being UTF-8, without echoing it.
std::string bad_byte(std::string_view s, std::size_t at) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(s[at])));
  return "byte " + std::to_string(at) + " is " + hex;
}

}  // namespace

bool is_valid_utf8(std::string_view s, std::size_t* bad_at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  auto fail = [&] {
    if (bad_at) *bad_at = i;
    return false;
  };
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length and the range of its second byte (RFC 3629,
    // table 3-7 of Unicode: no overlong forms, no surrogates, <= U+10FFFF).
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return fail();
    if (n - i < len || p[i + 1] < lo || p[i + 1] > hi) return fail();
    for (std::size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return fail();
    i += len;
  }
  return true;
}

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
    throw SpecError("--set", "the key is not valid UTF-8 (" + bad_byte(key, bad) + "): a job's fields are named in UTF-8");
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
    throw SpecError(key, "the value given by --set is not valid UTF-8 (" + bad_byte(text, bad) +
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

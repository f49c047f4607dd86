#include "core/spec/json_fields.h"

#include <cmath>
#include <cstdint>

#include "core/spec/spec_error.h"

namespace pw {
namespace {
std::string type_name(const nlohmann::json& v) { return v.type_name(); }
}  // namespace

JsonFields::JsonFields(const nlohmann::json& obj, std::string path) : obj_(obj), path_(std::move(path)) {
  if (!obj_.is_object()) throw SpecError(path_.empty() ? "$" : path_, "must be an object, got " + type_name(obj_));
}

bool JsonFields::has(const std::string& key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }

std::string JsonFields::path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

const nlohmann::json* JsonFields::find(const std::string& key) {
  seen_.insert(key);
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string JsonFields::str(const std::string& key, std::optional<std::string> fallback) {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw SpecError(path_of(key), "is required");
  }
  if (!v->is_string()) throw SpecError(path_of(key), "must be a string, got " + type_name(*v));
  return v->get<std::string>();
}

std::string JsonFields::choice(const std::string& key, const std::vector<std::string>& options,
                               std::optional<std::string> fallback) {
  std::string s = str(key, fallback);
  for (const auto& o : options)
    if (o == s) return s;
  std::string list;
  for (const auto& o : options) list += (list.empty() ? "" : ", ") + o;
  throw SpecError(path_of(key), "must be one of " + list + ", got \"" + s + "\"");
}

namespace {
using Wide = __int128;  // holds every int64 and uint64 exactly

std::string wide_str(Wide v) {
  if (v >= 0) return std::to_string(static_cast<unsigned long long>(v));
  return "-" + std::to_string(static_cast<unsigned long long>(-v));
}

// The integer a JSON value denotes, in a type wide enough for any of them;
// nullopt for a non-integer. Floats with an integral value (1e12) count;
// beyond 2^100 they are clamped, which every bound refuses anyway.
std::optional<Wide> as_integer(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return static_cast<Wide>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<Wide>(v.get<std::int64_t>());
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) return std::nullopt;
    constexpr double lim = 1267650600228229401496703205376.0;  // 2^100
    if (d >= lim) return static_cast<Wide>(1) << 100;
    if (d <= -lim) return -(static_cast<Wide>(1) << 100);
    return static_cast<Wide>(d);
  }
  return std::nullopt;
}

// Numbers are echoed in errors; a huge literal is shortened.
std::string shown(const nlohmann::json& v) {
  std::string s = v.is_number() ? v.dump() : v.type_name();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

template <class T>
T checked_integer(const nlohmann::json& v, T min, T max, const std::string& path) {
  auto x = as_integer(v);
  std::string range = "[" + wide_str(min) + ", " + wide_str(max) + "]";
  if (!x) throw SpecError(path, "must be an integer in " + range + ", got " + shown(v));
  if (*x < static_cast<Wide>(min) || *x > static_cast<Wide>(max))
    throw SpecError(path, "must be in " + range + ", got " + shown(v));
  return static_cast<T>(*x);
}
}  // namespace

template <class T>
T JsonFields::integer(const std::string& key, T min, T max, std::optional<T> fallback) {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw SpecError(path_of(key), "is required");
  }
  return checked_integer<T>(*v, min, max, path_of(key));
}

double JsonFields::number(const std::string& key, double min, double max, std::optional<double> fallback) {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw SpecError(path_of(key), "is required");
  }
  if (!v->is_number()) throw SpecError(path_of(key), "must be a number, got " + type_name(*v));
  double x = v->get<double>();
  if (!std::isfinite(x) || x < min || x > max)
    throw SpecError(path_of(key), "must be in [" + nlohmann::json(min).dump() + ", " + nlohmann::json(max).dump() +
                                      "], got " + shown(*v));
  return x;
}

bool JsonFields::boolean(const std::string& key, bool fallback) {
  const auto* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw SpecError(path_of(key), "must be true or false, got " + type_name(*v));
  return v->get<bool>();
}

template <class T>
std::vector<T> JsonFields::int_list(const std::string& key, T min, T max, std::size_t max_count,
                                    std::optional<std::vector<T>> fallback) {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw SpecError(path_of(key), "is required");
  }
  if (!v->is_array() || v->empty()) throw SpecError(path_of(key), "must be a non-empty array of integers");
  if (v->size() > max_count)
    throw SpecError(path_of(key), "has " + std::to_string(v->size()) + " entries, at most " +
                                      std::to_string(max_count) + " allowed");
  std::vector<T> out;
  for (size_t i = 0; i < v->size(); ++i)
    out.push_back(checked_integer<T>((*v)[i], min, max, path_of(key) + "[" + std::to_string(i) + "]"));
  return out;
}

JsonFields JsonFields::object(const std::string& key, bool required) {
  const auto* v = find(key);
  if (!v) {
    if (required) throw SpecError(path_of(key), "is required");
    return JsonFields(nlohmann::json::object(), path_of(key));
  }
  return JsonFields(*v, path_of(key));
}

nlohmann::json JsonFields::raw(const std::string& key) {
  const auto* v = find(key);
  return v ? *v : nlohmann::json();
}

void JsonFields::finish() const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (!seen_.count(it.key())) throw SpecError(path_of(it.key()), "unknown field");
}

}  // namespace pw

namespace pw {
template int JsonFields::integer<int>(const std::string&, int, int, std::optional<int>);
template std::int64_t JsonFields::integer<std::int64_t>(const std::string&, std::int64_t, std::int64_t,
                                                        std::optional<std::int64_t>);
template std::uint64_t JsonFields::integer<std::uint64_t>(const std::string&, std::uint64_t, std::uint64_t,
                                                          std::optional<std::uint64_t>);
template std::vector<int> JsonFields::int_list<int>(const std::string&, int, int, std::size_t,
                                                    std::optional<std::vector<int>>);
template std::vector<std::int64_t> JsonFields::int_list<std::int64_t>(const std::string&, std::int64_t, std::int64_t,
                                                                      std::size_t,
                                                                      std::optional<std::vector<std::int64_t>>);
}  // namespace pw

#include "core/spec/json_fields.h"

#include <cmath>

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

long long JsonFields::integer(const std::string& key, long long min, std::optional<long long> fallback) {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw SpecError(path_of(key), "is required");
  }
  long long x;
  if (v->is_number_integer()) {
    x = v->get<long long>();
  } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()) {
    x = static_cast<long long>(v->get<double>());
  } else {
    throw SpecError(path_of(key), "must be an integer, got " + (v->is_number() ? v->dump() : type_name(*v)));
  }
  if (x < min) throw SpecError(path_of(key), "must be >= " + std::to_string(min) + ", got " + std::to_string(x));
  return x;
}

double JsonFields::number(const std::string& key, double min, std::optional<double> fallback) {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw SpecError(path_of(key), "is required");
  }
  if (!v->is_number()) throw SpecError(path_of(key), "must be a number, got " + type_name(*v));
  double x = v->get<double>();
  if (!std::isfinite(x) || x < min) throw SpecError(path_of(key), "must be >= " + nlohmann::json(min).dump() + ", got " + v->dump());
  return x;
}

bool JsonFields::boolean(const std::string& key, bool fallback) {
  const auto* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw SpecError(path_of(key), "must be true or false, got " + type_name(*v));
  return v->get<bool>();
}

std::vector<long long> JsonFields::int_list(const std::string& key, long long min,
                                            std::optional<std::vector<long long>> fallback) {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw SpecError(path_of(key), "is required");
  }
  if (!v->is_array() || v->empty()) throw SpecError(path_of(key), "must be a non-empty array of integers");
  std::vector<long long> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    std::string p = path_of(key) + "[" + std::to_string(i) + "]";
    if (!e.is_number_integer()) throw SpecError(p, "must be an integer, got " + type_name(e));
    if (e.get<long long>() < min) throw SpecError(p, "must be >= " + std::to_string(min) + ", got " + e.dump());
    out.push_back(e.get<long long>());
  }
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

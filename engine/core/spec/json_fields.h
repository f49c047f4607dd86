#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pw {

// Typed, path-aware access to one JSON object of a job spec. Every read
// records the key, so finish() can name fields nobody asked for (typos).
// All errors are SpecError with the full JSON path.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& obj, std::string path);

  bool has(const std::string& key) const;
  std::string path_of(const std::string& key) const;

  std::string str(const std::string& key, std::optional<std::string> fallback = std::nullopt);
  std::string choice(const std::string& key, const std::vector<std::string>& options,
                     std::optional<std::string> fallback = std::nullopt);
  long long integer(const std::string& key, long long min, std::optional<long long> fallback = std::nullopt);
  double number(const std::string& key, double min, std::optional<double> fallback = std::nullopt);
  bool boolean(const std::string& key, bool fallback);
  std::vector<long long> int_list(const std::string& key, long long min,
                                  std::optional<std::vector<long long>> fallback = std::nullopt);
  // A nested object (or empty object if absent and optional).
  JsonFields object(const std::string& key, bool required = true);
  // Raw access for fields a later layer interprets (data, search_space).
  nlohmann::json raw(const std::string& key);

  // Throws for any key that was never read.
  void finish() const;

 private:
  const nlohmann::json* find(const std::string& key);
  nlohmann::json obj_;
  std::string path_;
  std::set<std::string> seen_;
};

}  // namespace pw

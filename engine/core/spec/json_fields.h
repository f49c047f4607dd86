#pragma once
#include <cstddef>
#include <cstdint>
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
  const std::string& path() const { return path_; }
  // The object itself, for tables keyed by data (sizes), not field names.
  const nlohmann::json& raw_object() const { return obj_; }

  std::string str(const std::string& key, std::optional<std::string> fallback = std::nullopt);
  std::string choice(const std::string& key, const std::vector<std::string>& options,
                     std::optional<std::string> fallback = std::nullopt);
  // An integer read in its own type T (int, std::int64_t, std::uint64_t):
  // anything outside [min, max], however written (1e12, 4294967296, -0.5),
  // is refused naming the path, never wrapped by a cast.
  template <class T>
  T integer(const std::string& key, T min, T max, std::optional<T> fallback = std::nullopt);
  // A finite number in [min, max].
  double number(const std::string& key, double min, double max, std::optional<double> fallback = std::nullopt);
  bool boolean(const std::string& key, bool fallback);
  // A non-empty array of at most max_count integers, each in [min, max].
  template <class T>
  std::vector<T> int_list(const std::string& key, T min, T max, std::size_t max_count,
                          std::optional<std::vector<T>> fallback = std::nullopt);
  // A nested object (or empty object if absent and optional).
  JsonFields object(const std::string& key, bool required = true);
  // Raw access for fields parsed separately (search_space's layer lists).
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

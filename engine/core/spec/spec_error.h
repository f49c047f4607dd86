#pragma once
#include <stdexcept>
#include <string>

namespace pw {

// A job spec problem. `path` is the JSON path of the offending field so the
// user can find it ("pipeline.stages"); what() reads "path: reason".
class SpecError : public std::runtime_error {
 public:
  SpecError(std::string path, const std::string& reason)
      : std::runtime_error(path + ": " + reason), path_(std::move(path)), reason_(reason) {}
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

}  // namespace pw

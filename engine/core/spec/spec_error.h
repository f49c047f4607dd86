#pragma once
#include <stdexcept>
#include <string>

namespace pw {

// Text from the user's input as it appears in a message: at most `max`
// bytes, then how long it really was. A 10 MB field value or key is
// never echoed in full.
inline std::string clip_for_message(const std::string& s, std::size_t max = 200) {
  if (s.size() <= max) return s;
  return s.substr(0, max) + "... (clipped: " + std::to_string(s.size()) + " bytes in all)";
}

// A job spec problem. `path` is the JSON path of the offending field so the
// user can find it ("pipeline.stages"); what() reads "path: reason". The
// one place every spec message is formatted: path and reason are clipped
// there (clip_for_message), so no error repeats a huge value in full.
class SpecError : public std::runtime_error {
 public:
  SpecError(std::string path, const std::string& reason)
      : std::runtime_error(clip_for_message(path) + ": " + clip_for_message(reason, 400)),
        path_(std::move(path)),
        reason_(clip_for_message(reason, 400)) {}
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

}  // namespace pw

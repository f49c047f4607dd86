#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pw {

// Follows a file that a worker appends lines to (the engine's event logs,
// the CSP trainers' record streams): each poll returns the complete lines
// added since the last one; a line without its newline yet waits for the
// next poll. A file shorter than what was read was started again (a worker
// truncates its log on opening), so what follows is a new stream. A missing
// file is simply not there yet. The one tailer of worker output.
class LineTail {
 public:
  explicit LineTail(std::string file) : file_(std::move(file)) {}
  std::vector<std::string> poll();

 private:
  std::string file_;
  std::int64_t pos_ = 0;
  std::string partial_;
};

}  // namespace pw

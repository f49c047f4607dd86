#pragma once
#include <fstream>
#include <string>

namespace pw::cli {

// A file a command writes (--trace, export): opening, every buffered write
// and the final close are checked, so a full disk or /dev/full is an error
// naming the file and the reason, never a truncated file and exit 0.
class OutputFile {
 public:
  // `what` names the file in messages ("trace"). Throws std::runtime_error.
  OutputFile(std::string path, std::string what);
  ~OutputFile();  // without close(): closed, errors ignored (an error path is already unwinding)
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes and closes; throws std::runtime_error when any write failed.
  void close();

 private:
  std::string path_, what_;
  std::ofstream out_;
  bool closed_ = false;
};

}  // namespace pw::cli

#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

// Helpers shared by the fuzz targets.
namespace pw::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Splits "document\0line\nline..." into the document and the lines after
// the first NUL byte (the `--set` overrides of fuzz_job).
inline std::vector<std::string> lines_after_nul(std::string& text) {
  std::vector<std::string> lines;
  auto nul = text.find('\0');
  if (nul == std::string::npos) return lines;
  std::string rest = text.substr(nul + 1);
  text.resize(nul);
  std::size_t pos = 0;
  while (pos <= rest.size()) {
    auto nl = rest.find('\n', pos);
    std::string line = rest.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (!line.empty()) lines.push_back(line);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return lines;
}

}  // namespace pw::fuzz

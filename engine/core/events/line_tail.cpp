#include "core/events/line_tail.h"

#include <fstream>
#include <iterator>

namespace pw {

std::vector<std::string> LineTail::poll() {
  std::vector<std::string> lines;
  std::ifstream in(file_, std::ios::binary);
  if (!in) return lines;
  in.seekg(0, std::ios::end);
  if (static_cast<std::int64_t>(in.tellg()) < pos_) {
    pos_ = 0;
    partial_.clear();
  }
  in.seekg(pos_);
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  pos_ += static_cast<std::int64_t>(chunk.size());
  partial_ += chunk;
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(partial_.substr(start, nl - start));
  partial_.erase(0, start);
  return lines;
}

}  // namespace pw

#include "cli/format.h"

#include <cstdio>

namespace pw::cli {

std::string gib(std::uint64_t bytes) { return fixed(bytes / 1073741824.0, 2) + " GiB"; }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pct(double fraction) { return fixed(fraction * 100, 1) + "%"; }

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace pw::cli

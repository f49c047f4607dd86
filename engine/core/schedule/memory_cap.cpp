#include "core/schedule/memory_cap.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace pw {
namespace {

// 2: ZB-H2's 2p-1 in flight is about twice 1F1B's; a larger fraction caps nothing any order holds.
constexpr double kMostFraction = 2.0;

double number_of(const std::string& s, const std::string& whole) {
  if (s.empty() || s.find_first_not_of("0123456789.") != std::string::npos || std::count(s.begin(), s.end(), '.') > 1 ||
      s == ".")
    throw std::invalid_argument("cannot read \"" + whole +
                                "\": a fraction of 1F1B's activations (\"1/3\", 0.5) or bytes (\"12GiB\", \"800 MB\")");
  return std::stod(s);
}

}  // namespace

MemoryCap memory_cap_fraction(double f) {
  if (!(f > 0 && f <= kMostFraction))
    throw std::invalid_argument("a fraction of 1F1B's activations must be in (0, 2], got " + std::to_string(f));
  MemoryCap c;
  c.fraction = f;
  return c;
}

MemoryCap parse_memory_cap(const std::string& text) {
  std::string t;
  for (char ch : text)
    if (!std::isspace(static_cast<unsigned char>(ch))) t += ch;
  if (t.empty()) throw std::invalid_argument("empty: a fraction (\"1/3\") or bytes (\"12GiB\")");
  if (auto slash = t.find('/'); slash != std::string::npos) {
    const double a = number_of(t.substr(0, slash), text), b = number_of(t.substr(slash + 1), text);
    if (!(b > 0)) throw std::invalid_argument("\"" + text + "\": the denominator must be > 0");
    return memory_cap_fraction(a / b);
  }
  size_t unit_at = t.find_first_not_of("0123456789.");
  if (unit_at == std::string::npos) return memory_cap_fraction(number_of(t, text));
  const double n = number_of(t.substr(0, unit_at), text);
  std::string unit = t.substr(unit_at);
  for (char& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  double scale = 0;
  if (unit == "b") scale = 1;
  if (unit == "kb") scale = 1e3;
  if (unit == "mb") scale = 1e6;
  if (unit == "gb") scale = 1e9;
  if (unit == "kib") scale = 1024.0;
  if (unit == "mib") scale = 1024.0 * 1024;
  if (unit == "gib") scale = 1024.0 * 1024 * 1024;
  if (unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  if (scale == 0)
    throw std::invalid_argument("\"" + text + "\": unknown unit \"" + t.substr(unit_at) +
                                "\" (B, KB, MB, GB, KiB, MiB, GiB, TiB)");
  const double bytes = n * scale;
  if (!(bytes >= 1) || bytes > 1e18) throw std::invalid_argument("\"" + text + "\": must be 1 B to 1e18 B");
  MemoryCap c;
  c.bytes = static_cast<std::uint64_t>(std::llround(bytes));
  return c;
}

std::string to_string(const MemoryCap& cap) {
  char buf[64];
  if (cap.fraction > 0) {
    for (int den : {1, 2, 3, 4, 5, 6, 8})
      for (int num = 1; num <= 2 * den; ++num)
        if (std::abs(cap.fraction - static_cast<double>(num) / den) < 1e-9) {
          std::snprintf(buf, sizeof buf, den == 1 ? "%dx 1f1b's activations" : "%d/%d of 1f1b's activations", num, den);
          return buf;
        }
    std::snprintf(buf, sizeof buf, "%.4g of 1f1b's activations", cap.fraction);
    return buf;
  }
  if (cap.bytes > 0) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(cap.bytes) / (1024.0 * 1024 * 1024));
    return buf;
  }
  return "none";
}

double memory_cap_units(const MemoryCap& cap, int devices, int microbatches, int chunks, double unit_bytes,
                        double device_mb_bytes) {
  if (!cap.set()) return std::numeric_limits<double>::infinity();
  const double in_1f1b = std::min(microbatches, devices);
  if (cap.fraction > 0) {
    if (device_mb_bytes > 0) {
      // A microbatch that holds nothing on the device (all offloaded): any count fits.
      if (!(unit_bytes > 0)) return std::numeric_limits<double>::infinity();
      return cap.fraction * in_1f1b * device_mb_bytes / unit_bytes;
    }
    return cap.fraction * in_1f1b * chunks;
  }
  if (!(unit_bytes > 0)) return std::numeric_limits<double>::infinity();  // nothing held: any cap fits
  return static_cast<double>(cap.bytes) / unit_bytes;
}

}  // namespace pw

#pragma once
#include <cstdint>
#include <string>

namespace pw::cli {

std::string gib(std::uint64_t bytes);      // "10.52 GiB"
std::string fixed(double v, int decimals); // "12.50"
std::string pct(double fraction);          // "12.5%"
std::string pad(const std::string& s, size_t width);  // right-aligned

}  // namespace pw::cli

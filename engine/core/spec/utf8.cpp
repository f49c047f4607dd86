#include "core/spec/utf8.h"

#include <cstdio>

namespace pw {

bool is_valid_utf8(std::string_view s, std::size_t* bad_at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  auto fail = [&] {
    if (bad_at) *bad_at = i;
    return false;
  };
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length and the range of its second byte (RFC 3629,
    // table 3-7 of Unicode: no overlong forms, no surrogates, <= U+10FFFF).
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return fail();
    if (n - i < len || p[i + 1] < lo || p[i + 1] > hi) return fail();
    for (std::size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return fail();
    i += len;
  }
  return true;
}

std::string utf8_error_at(std::string_view s, std::size_t at) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(s[at])));
  return "byte " + std::to_string(at) + " is " + hex;
}

}  // namespace pw

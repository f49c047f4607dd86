#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace pw {

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF). When it is not, `bad_at` (if given)
// is the offset of the first byte that is not part of a valid sequence.
// Every text Pipewright takes into a job, a profile or a recording is
// checked with it (or by nlohmann's lexer, which checks JSON strings alike).
bool is_valid_utf8(std::string_view s, std::size_t* bad_at = nullptr);

// "byte 3 is 0xff": where a text stops being UTF-8, for a message that must
// not echo the text itself.
std::string utf8_error_at(std::string_view s, std::size_t bad_at);

}  // namespace pw

#pragma once
// A c10d Store keeps values as bytes; the engine's values are strings (JSON,
// numbers). One definition for every file that reads or writes the store:
// copies in each file's anonymous namespace clashed when a unity build put
// two of them in one translation unit (issue 42).
#include <cstdint>
#include <string>
#include <vector>

namespace pw::rt {

inline std::vector<std::uint8_t> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string from_bytes(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

}  // namespace pw::rt

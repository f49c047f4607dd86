#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace pw {

// Input files are read whole and parsed into a DOM, so both are bounded
// before anything is allocated from them: a JSON value nested deeper than
// kMaxJsonDepth, or a file larger than the caller's bound, is refused
// rather than overflowing the stack or the memory (docs/jobs.md, "Bounds").
constexpr int kMaxJsonDepth = 64;
constexpr std::size_t kMaxJobFileBytes = 16u << 20;      // 16 MiB
constexpr std::size_t kMaxProfileFileBytes = 64u << 20;  // 64 MiB

// Parses `text` as JSON. Throws SpecError naming the JSON path of the
// problem ("model.hidden: number out of range", "$: not valid JSON at byte
// 12 ...") for malformed text, a number beyond double range (1e400) or
// nesting deeper than `max_depth` (kMaxJsonDepth; less for a `--set` value,
// whose key's parts take levels of the document too). Text that is not
// UTF-8 is refused saying so, at the path of the value it is in. `root`
// prefixes every path (the `--set` key for an override value; empty for a
// whole document).
nlohmann::json parse_bounded_json(const std::string& text, const std::string& root = "",
                                  int max_depth = kMaxJsonDepth);

// Reads a whole regular file of at most `max_bytes`. Throws SpecError at
// path "$" for a missing file, a directory, a device or FIFO (/dev/zero),
// or a file over the bound. `what` names the file's role in messages.
std::string read_bounded_file(const std::string& file, std::size_t max_bytes, const std::string& what);

}  // namespace pw

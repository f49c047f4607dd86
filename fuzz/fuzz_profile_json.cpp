// Pipewright's JSON profile reader (core/model/profile_io). A malformed
// profile is refused with std::runtime_error naming the file; anything else
// is a finding.
#include <cstdint>
#include <stdexcept>

#include "core/model/profile_io.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text = pw::fuzz::text_of(data, size);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos || text[text.find_first_not_of(" \t\r\n")] != '{')
    text = "{" + text;  // keep to the JSON branch: the PipeDream reader has its own target
  try {
    (void)pw::profile_from_text(text, "fuzz.json", 0);
    (void)pw::profile_from_text(text, "fuzz.json", 7);
  } catch (const std::runtime_error&) {
  }
  return 0;
}

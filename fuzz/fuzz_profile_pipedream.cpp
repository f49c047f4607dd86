// PipeDream's graph.txt reader (core/model/pipedream_graph) and its
// conversion to a pipeline profile. Malformed input is refused with
// std::runtime_error "<name>:<line>: <reason>"; anything else is a finding.
#include <cstdint>
#include <stdexcept>

#include "core/model/pipedream_graph.h"
#include "core/model/profile_io.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text = pw::fuzz::text_of(data, size);
  try {
    auto graph = pw::parse_pipedream_graph(text, "graph.txt");
    (void)pw::pipedream_profiled_minibatch(graph);
    (void)pw::pipedream_graph_to_profile(graph, "fuzz");
  } catch (const std::runtime_error&) {
  }
  try {
    (void)pw::profile_from_text(text, "graph.txt", 16);
  } catch (const std::runtime_error&) {
  }
  return 0;
}

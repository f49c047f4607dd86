#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/layer_profile.h"

namespace pw {

// PipeDream's profile format (graph.txt, github.com/msr-fiddle/pipedream):
//   nodeID -- DESCRIPTION -- forward_compute_time=F, backward_compute_time=B, activation_size=A, parameter_size=P
//   <TAB>nodeA -- nodeB
// Times are milliseconds for the whole minibatch the profile was taken at;
// activation_size is the node's output in bytes (a list "[a; b]" for
// several outputs); parameter_size is fp32 parameter bytes.
struct PipeDreamNode {
  std::string id;
  std::string desc;
  double fwd_ms = 0;
  double bwd_ms = 0;
  std::vector<double> activation_sizes;  // one per output
  double parameter_size = 0;
  int line = 0;  // 1-based line in the file
  double activation_total() const;
};

struct PipeDreamGraph {
  std::vector<PipeDreamNode> nodes;             // in file order
  std::vector<std::pair<int, int>> edges;       // node indices, producer -> consumer
};

// Throws std::runtime_error "<name>:<line>: <reason>" for malformed input
// (bad node or edge line, missing or non-numeric field, duplicate node,
// edge to an undeclared node, cycle).
PipeDreamGraph parse_pipedream_graph(const std::string& text, const std::string& name);

// True when the first non-blank line has PipeDream's "id -- desc -- fields" shape.
bool looks_like_pipedream_graph(const std::string& text);

// The minibatch size the graph was profiled at, inferred from the data
// itself; 0 when it cannot be told. In order: our own exported header node
// "Input(batch_size=N, ...)"; an image input node of N x 3 x S x S fp32
// (S = 224, 299, 331, 32); an LSTM(in, hidden) node whose outputs list
// [out; h; c] has h = c = N x hidden x 4 bytes.
int pipedream_profiled_minibatch(const PipeDreamGraph& g);

// The pipeline view of the graph, at the profiled minibatch:
// - "Input*" source nodes are dropped (their time is data loading, which
//   PipeDream's optimizer also zeroes); their bytes become the consumers'
//   input_bytes. "__getitem__" sinks (unused tuple outputs) are dropped too.
// - layers follow a topological order, ties broken by the numeric part of
//   the node id (the profiler numbers nodes in execution order), so
//   branches stay contiguous as PyTorch ran them;
// - cut_bytes[i] counts every tensor produced at or before layer i and
//   consumed after it (each tensor once, however many consumers);
// - activation_bytes = output_bytes = the node's activation_size total
//   (PipeDream uses it both for stashing and for transfers);
//   input_bytes = sum of the producers' outputs; param_bytes as given;
//   optimizer state is not in the format (0).
ModelProfile pipedream_graph_to_profile(const PipeDreamGraph& g, const std::string& source);

// Bytes crossing each cut of a linear order given each layer's producers.
std::vector<std::uint64_t> cut_bytes_of(const std::vector<LayerProfile>& layers,
                                        const std::vector<std::vector<int>>& inputs);

// The profile in graph.txt form. Layers become node1..nodeN; a header node
// "node0 -- Input(batch_size=B, device=D)" feeds every layer without
// producers (PipeDream drops Input sources, so its tools read the file as
// they read their own). Edges come from `inputs`, or a chain when empty.
// activation_size carries output_bytes. Numbers are written in shortest
// round-trip form, so importing the text gives the same values back.
std::string pipedream_graph_text(const ModelProfile& p);

}  // namespace pw

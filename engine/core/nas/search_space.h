#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/layer_profile.h"
#include "core/spec/job_spec.h"

namespace pw::nas {

// One candidate operation of a choice layer, with its cost for one
// microbatch (training.microbatch_size) under the job's device.
struct Candidate {
  std::string op;   // conv, sep_conv, light_conv, attention, cross_attention, glu, identity, uniform, shared
  int kernel = 0;   // conv family
  int heads = 0;    // light_conv, attention
  int width = 0;    // CNN: inner width of a conv candidate
  int replica = 0;  // replicated spaces (48/72/96): copies with their own weights
  LayerProfile cost;
  std::string label() const;  // "light_conv k15 h4 #2"
  // On the device while cached: weights, gradients, optimizer state.
  std::int64_t resident_bytes() const {
    return static_cast<std::int64_t>(2 * cost.param_bytes + cost.optimizer_bytes);
  }
  // Moved between host and device: weights and optimizer state.
  std::int64_t transfer_bytes() const { return static_cast<std::int64_t>(cost.param_bytes + cost.optimizer_bytes); }
};

// A position in the supernet: the subnet picks exactly one candidate.
struct ChoiceLayer {
  std::string name;
  std::vector<Candidate> candidates;
  int choices() const { return static_cast<int>(candidates.size()); }
};

// Shared non-choice parameters (embedding / stem, head) either stay frozen
// (NASPipe's rule: no subnet writes them, so they create no dependency) or
// are trained; trained ones become one-candidate choice layers at the ends,
// which CSP then orders exactly like any other shared layer (at the price
// of serialising the stages that hold them).
enum class SharedRule { Frozen, Train };

struct SearchSpace {
  std::string kind;  // evolved-transformer | fmnist-cnn | uniform | custom
  std::vector<ChoiceLayer> layers;
  // Frozen shared parts, run by every subnet on the first / last stage:
  // forward cost, and backward cost for the input gradient only.
  bool has_stem = false, has_head = false;
  LayerProfile stem, head;
  SharedRule shared = SharedRule::Frozen;
  int replication = 1;
  // Search-time settings that live in the same JSON object.
  int window = 32;                  // CSP lookahead: subnets in flight at most
  std::string partition = "balanced";  // balanced | csp (refine_partition_for_csp)
  double device_budget_bytes = 0;   // per stage, for candidate weights; 0 = half the device
  std::string sampler = "uniform";  // uniform | list
  std::string subnet_file;          // sampler "list"

  int size() const { return static_cast<int>(layers.size()); }
  int max_choices() const;
  double log10_subnets() const;  // log10 of the number of distinct subnets
};

// Parses job.search_space ("search_space" in the document). Throws SpecError
// naming the JSON path. A null search_space is an error: callers check
// is_supernet_job first.
SearchSpace parse_search_space(const JobSpec& job);
bool is_supernet_job(const JobSpec& job);

}  // namespace pw::nas

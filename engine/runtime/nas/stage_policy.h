#pragma once
// A supernet stage's next action (csp_trainer.cpp): core's CSP policy, or
// the racing baseline the benchmarks compare it with. No tensors: it
// decides from what is in flight and what has arrived.
#include <functional>
#include <optional>
#include <vector>

#include "core/nas/csp_policy.h"

namespace pw::rt::nas {

class StagePolicy {
 public:
  // `csp` false: the racing baseline (same pipeline, no conflict test: a
  // ready backward, else the next forward that is there), which shows what
  // CSP's order costs and what it protects (reproducible weights).
  StagePolicy(pw::nas::CspStage& stage, bool csp, int window) : stage_(stage), csp_(csp), window_(window) {}

  // The next action, or nothing (idle). `in_flight(b)`: subnet b's forward
  // ran here and its backward has not; `first_arrived`: the lowest subnet
  // whose activation waits here (-1: none; stages > 0). CSP's waits go to
  // `waits` (the recorder reports them).
  std::optional<pw::nas::CspAction> next(const std::function<bool(int)>& in_flight, int first_arrived,
                                         std::vector<pw::nas::SubnetWait>* waits) const;

 private:
  pw::nas::CspStage& stage_;
  bool csp_;
  int window_;
};

}  // namespace pw::rt::nas

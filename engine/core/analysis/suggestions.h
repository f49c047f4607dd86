#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace pw {

// A change to a job, backed by simulating the changed job exactly as
// `pipewright simulate JOB --set ...` would.
struct Suggestion {
  std::string change;                  // what changes, in words
  std::string addresses;               // the causes it works on
  std::vector<std::string> overrides;  // the --set assignments that make it
  double iteration_ms_before = 0, iteration_ms_after = 0;
  double bubble_before = 0, bubble_after = 0;
  std::uint64_t peak_memory_before = 0, peak_memory_after = 0;  // the largest stage's, bytes
  std::uint64_t memory_budget = 0;
};

struct SuggestionReport {
  double iteration_ms = 0;  // the job as it is, simulated
  std::vector<Suggestion> suggestions;  // improving ones, best first
  // Improving in simulation by no more than the model's error on the run:
  // not offered (the advice would not hold), counted and named in `notes`.
  int withheld = 0;
  double model_error = -1;  // what was required of a gain; < 0: unknown
  std::vector<std::string> notes;       // candidates that could not be simulated, and why
  // What the simulated job's costs lack that the advice leans on (a
  // measured profile without host costs: smaller microbatches look better
  // than they are); the report says it beside the advice.
  std::vector<std::string> caveats;
};

// Tries more microbatches (smaller ones, same batch), every other planner
// (moving layers between stages, other memory policies) and 1F1B instead of
// GPipe, and with data-parallel replicas other gradient bucket sizes, half
// the replicas over twice the stages and the planner's (stages, replicas)
// split; keeps the feasible ones that shorten the simulated iteration, at
// most `max`. `job` is the job document as recorded (after overrides).
// `model_error` (model_error(), a fraction) is how far the simulator was
// off on the run the job made: suggestions whose simulated gain does not
// exceed it are withheld (withhold_within_error); < 0 (unknown, nothing
// recorded to compare) withholds nothing and says so in `notes`.
SuggestionReport suggest_changes(const nlohmann::json& job, int max = 5, double model_error = -1);

// The candidates of suggest_changes simulated, every improving one, best
// first, no rule applied and none cut: what advise() then judges. A caller
// that judges one job against a changing error (the studio's explain of a
// growing run) simulates once.
SuggestionReport simulate_suggestions(const nlohmann::json& job);

// The advice rule, the one place it is applied: withhold_within_error, then
// at most `max`. suggest_changes(job, max, e) is advise(simulate_suggestions(job), e, max).
SuggestionReport advise(SuggestionReport simulated, double model_error, int max = 5);

// Moves every suggestion whose simulated gain (1 - after / before) does not
// exceed `model_error` out of `suggestions`, counting it in `withheld` and
// naming it in `notes`; records the error. < 0 (unknown) withholds nothing
// and notes that the advice is unchecked. The one rule for explain and the
// studio's Apply.
void withhold_within_error(SuggestionReport& rep, double model_error);

// The plan change in words: layers moving between stages and per-layer
// policy changes ("layers 11-12 move from stage 1 to stage 0; layer 7 swap -> recompute").
std::string describe_plan_change(const Plan& from, const Plan& to);

}  // namespace pw

#pragma once
// Weight stashing (PipeDream): which weight version a microbatch runs
// with, and the stashed version's gradients folded into the live
// weights' update. Owns the version forwards stash now; the versions in
// use belong to the microbatches that hold them (MicrobatchState::stash).
#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/plan/plan.h"
#include "runtime/stage/active_schedule.h"
#include "runtime/stage/microbatch_state.h"

namespace pw::rt::stage_impl {

class WeightStash {
 public:
  using Layers = std::vector<torch::nn::Sequential>;  // all model layers, ours non-null

  // The weights a forward on `chunk` uses: null for the live ones, or
  // (async, > 1 version on this device) a copy of them shared by every
  // microbatch that starts before the next update.
  std::shared_ptr<Stash> for_forward(const ActiveSchedule& run, int chunk, const Layers& layers);
  // The live weights were updated: the next forward stashes the new version.
  void new_version() { current_.clear(); }

  // Layer `l` as microbatch `st` runs it (`first`: its virtual stage's first layer).
  static torch::nn::Sequential& layer_of(MicrobatchState& st, Layers& layers, int l, int first);
  // The stashed version's gradients belong to the live weights' update.
  static void fold_gradients(MicrobatchState& st, const StageRange& r, const Layers& layers);
  // The stashed versions still in use, each counted once.
  static std::int64_t stashed_bytes(const MicrobatchStates& state);

 private:
  std::map<int, std::shared_ptr<Stash>> current_;  // chunk -> stash of the live weights
};

}  // namespace pw::rt::stage_impl

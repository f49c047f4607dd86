#pragma once
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/nas/device_cache_plan.h"
#include "core/nas/supernet_sim.h"
#include "runtime/memory.h"
#include "runtime/nas/supernet_modules.h"

namespace pw::rt::nas {

// One stage's supernet candidates in a host store, with a budgeted subset
// on `device`: the trainer's side of core's CachePlan. The store owns every
// candidate's weights and optimizer state; a load copies them into separate
// device storage (on CPU a real clone, the same code path a GPU takes with
// pinned host memory and non-blocking copies), the stage trains on the
// device copy, an eviction copies weights and state back and frees the
// device copy. Gradients exist on the device only, between a backward and
// its update, while the candidate is held (never evicted).
//
// The device account is the engine's (runtime/memory.h): parameters,
// gradients (reserved at load: the backward will make them) and optimizer
// state summed from the tensors themselves, against the capacity; a load
// that would exceed it throws MemoryBudgetError, which the plan makes
// impossible.
class DeviceCache {
 public:
  // (is_load, key, start_ns, end_ns, bytes), for events.
  using TransferFn = std::function<void(bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t)>;
  using ClockFn = std::function<std::int64_t()>;

  // Takes every candidate of `net` with state into the host store; the
  // device starts empty.
  DeviceCache(CnnSupernet& net, std::int64_t capacity_bytes, torch::Device device, ClockFn clock,
              TransferFn on_transfer = {});
  // Carries out one step of the plan: write-backs, then loads. Counts the
  // step's uses as hits when the device already holds them, from its own
  // map, not from the plan (throws std::logic_error when a use is neither
  // resident nor loaded: the plan and the cache disagree).
  void apply(const pw::nas::CacheStep& step);
  // End of the run: every resident candidate back to the host, and the
  // supernet's candidates pointing at the host copies (for hashing and
  // saving).
  void flush();

  // Every candidate's current parameters and optimizer state, wherever they
  // are (the device copy of a resident one, the host copy otherwise), in
  // CnnSupernet::state_bytes's layout: what a checkpoint saves. The net's
  // own tensors cannot give it (a candidate not resident has none there).
  std::string state_bytes() const;

  pw::nas::StageCacheFigures figures() const { return fig_; }
  void add_stall_ns(std::int64_t ns) { fig_.stall_ms += ns / 1e6; }
  MemoryBreakdown device() const { return dev_; }
  std::int64_t peak_device_bytes() const { return peak_; }
  std::int64_t capacity() const { return capacity_; }

 private:
  struct Host {
    std::vector<at::Tensor> params, state;
  };
  void load(std::int64_t key);
  void evict(std::int64_t key, bool sync);
  Candidate& cand(std::int64_t key);

  CnnSupernet& net_;
  std::int64_t capacity_;
  torch::Device device_;
  ClockFn clock_;
  TransferFn on_transfer_;
  std::unordered_map<std::int64_t, Host> host_;
  std::unordered_map<std::int64_t, bool> resident_;
  pw::nas::StageCacheFigures fig_;
  MemoryBreakdown dev_;
  std::int64_t peak_ = 0;
};

}  // namespace pw::rt::nas

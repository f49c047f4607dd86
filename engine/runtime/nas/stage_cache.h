#pragma once
// A supernet stage's device cache as the trainer drives it (csp_trainer.cpp).
#include <climits>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "core/nas/cache_prediction.h"
#include "core/nas/device_cache_plan.h"
#include "core/nas/nas_job.h"
#include "runtime/nas/device_cache.h"
#include "runtime/nas/stage_recorder.h"
#include "runtime/nas/supernet_modules.h"

namespace pw::rt::nas {

// Every candidate of the stage's slice as the device cache counts one it
// holds: parameters, their gradients (reserved: a backward makes them) and
// optimizer state; with the frozen stem and head.
inline std::int64_t resident_state_bytes(const CnnSupernet& net) {
  std::int64_t bytes = 0;
  auto add = [&](const at::Tensor& t) { bytes += t.defined() ? static_cast<std::int64_t>(t.nbytes()) : 0; };
  for (int layer = net.slots().first; layer <= net.slots().last; ++layer)
    for (int c = 0; c < net.choices(layer); ++c) {
      const Candidate& cand = net.candidate(layer, c);
      for (const auto& p : cand.params) bytes += 2 * static_cast<std::int64_t>(p.nbytes());
      for (const auto& s : cand.state) add(s);
    }
  if (net.has_stem()) add(net.stem_params().first), add(net.stem_params().second);
  if (net.has_head()) add(net.head_params().first), add(net.head_params().second);
  return bytes;
}

// The stage's device cache when its budget is below its slice (else
// inactive, every candidate resident): core's plan carried out in sequence
// order (CacheSchedule), loads ahead of need, and the stall a forward
// spends waiting for its step.
class StageCache {
 public:
  StageCache(const pw::nas::NasJob& nj, int stage, int window, CnnSupernet& net, const StageClock& clock,
             StageRecorder& rec)
      : capacity_(pw::nas::stage_capacities(nj)[stage]) {
    if (!pw::nas::stage_cache_active(nj)[stage]) {
      whole_slice_bytes_ = resident_state_bytes(net);
      return;
    }
    plan_ = std::make_unique<pw::nas::CachePlan>(pw::nas::plan_device_cache(
        pw::nas::stage_cache_steps(nj.space, nj.sequence, nj.stages[stage]), capacity_,
        pw::nas::SupernetSimInput{}.eviction));
    schedule_ = std::make_unique<pw::nas::CacheSchedule>(plan_.get(), window);
    cache_ = std::make_unique<DeviceCache>(
        net, capacity_, torch::Device(torch::kCPU), [&clock] { return clock.now(); },
        [this, &rec](bool load, std::int64_t key, std::int64_t a, std::int64_t z, std::int64_t bytes) {
          if (!replaying_) rec.transfer(load, key, a, z, bytes);
        });
  }
  // A resumed stage: the plan's steps for subnets < k carried out again on
  // the restored candidates, so the cache holds what the interrupted run's
  // held at its checkpoint (the prefetch stopped at k, see prefetch). The
  // copies are bit copies, so the values are the checkpoint's; the counts
  // add up to the uninterrupted run's, and the records (already in the
  // stream up to the checkpoint) are not repeated.
  void replay_to(int k) {
    if (!cache_ || k == 0) return;
    replaying_ = true;
    for (int b = 0; b < k; ++b) {
      advance(b, b + 1);
      if (!schedule_->ready(b))
        throw std::logic_error("device cache: the plan's step for subnet " + std::to_string(b) +
                               " could not run while replaying to the checkpoint at " + std::to_string(k));
      schedule_->started(b);
      schedule_->released(b);
    }
    replaying_ = false;
  }
  // What a checkpoint saves of the candidates (the cache knows where each one is).
  std::string state_bytes(const CnnSupernet& net) const { return cache_ ? cache_->state_bytes() : net.state_bytes(); }
  bool active() const { return cache_ != nullptr; }
  // The candidates' bytes on the device now: parameters, gradients and
  // optimizer state of those the cache holds, or of the whole slice.
  std::int64_t resident_bytes() const { return cache_ ? cache_->device().device_total() : whole_slice_bytes_; }
  // Whether forward b may run now (`now`: when the stage chose it). Loads
  // (synchronously on CPU) what it needs; when a victim is still held by an
  // older subnet, b waits like an idle stage: that subnet's update here,
  // after a gradient arrives, releases it. Either way the wait counts as stall.
  bool prepare_forward(int b, std::int64_t now) {
    if (!cache_ || schedule_->ready(b)) return true;
    advance(b, INT_MAX);
    if (stalled_since_ < 0) stalled_since_ = now;
    return schedule_->ready(b);
  }
  // An action starts at `now`: a stall that led to it ends.
  void action_starts(std::int64_t now) {
    if (stalled_since_ < 0) return;
    cache_->add_stall_ns(now - stalled_since_);
    stalled_since_ = -1;
  }
  void started(int b) {
    if (schedule_) schedule_->started(b);
  }
  void released(int b) {
    if (schedule_) schedule_->released(b);
  }
  // Prefetch in sequence order (on a GPU: a copy stream beside compute),
  // the steps of subnets below `limit` only: up to a checkpoint, the cache
  // then holds exactly what the plan's steps before it leave, which a
  // resume rebuilds (replay_to).
  void prefetch(int limit) { advance(-1, limit); }
  // End of the run: every candidate's final weights and state back in the
  // host store; the measured figures (null: no cache).
  nlohmann::json finish() {
    if (!cache_) return nullptr;
    cache_->flush();
    auto f = cache_->figures();
    return {{"uses", f.uses}, {"hits", f.hits}, {"loads", f.loads}, {"evictions", f.evictions},
            {"load_bytes", f.load_bytes}, {"stall_ms", f.stall_ms}, {"capacity_bytes", capacity_},
            {"peak_device_bytes", cache_->peak_device_bytes()}};
  }

 private:
  // Runs cache steps in sequence order as far as the plan allows (all
  // that may run, or until subnet `until`'s candidates are resident), the
  // steps of subnets below `limit` only.
  void advance(int until, int limit) {
    if (!cache_) return;
    while ((until < 0 || !schedule_->ready(until)) && schedule_->next_step() < limit) {
      const pw::nas::CacheStep* step = schedule_->advance();
      if (!step) break;
      cache_->apply(*step);
    }
  }
  std::int64_t capacity_;
  std::unique_ptr<pw::nas::CachePlan> plan_;
  std::unique_ptr<pw::nas::CacheSchedule> schedule_;
  std::unique_ptr<DeviceCache> cache_;
  std::int64_t whole_slice_bytes_ = 0;  // without a cache: every candidate, resident for the run
  std::int64_t stalled_since_ = -1;  // idle since then: the forward to run waits for its cache step
  bool replaying_ = false;
};

}  // namespace pw::rt::nas

#pragma once
#include <optional>
#include <set>
#include <vector>

#include "core/nas/subnet.h"
#include "core/nas/subnet_observer.h"

namespace pw::nas {

// Choice layers [first, last] held by one stage (empty when last < first).
struct StageSlots {
  int first = 0;
  int last = -1;
  int size() const { return last - first + 1; }
};

enum class CspActionKind { Forward, Backward };
struct CspAction {
  CspActionKind kind = CspActionKind::Forward;
  int subnet = 0;
};

// NASPipe's causal synchronous parallel rule for one pipeline stage: THE
// definition, driven by the supernet simulator and by the engine's CSP
// trainer alike. It is local: a stage needs only the (deterministic)
// subnet sequence and its own history.
//
// - Subnet b may run its forward here only when no earlier subnet w < b that
//   is unfinished here (its backward + update at this stage not done, which
//   includes subnets that have not even arrived) uses the same candidate in
//   one of this stage's choice layers.
// - The driver follows every backward at once by the subnet's update of its
//   own layers on this stage, then calls backward_done.
// - Stage 0 admits subnets in sequence order, at most `window` ids past the
//   oldest unfinished one (stage 0 finishes each subnet last, so that is the
//   global oldest): this bounds activations in flight.
// - next() prefers any ready backward (lowest id), then the lowest-id
//   eligible forward. The oldest unfinished subnet is never blocked at any
//   stage, hence the pipeline cannot deadlock (proof in docs/nas.md).
//
// Then every shared candidate sees reads and updates in sequence order,
// exactly as in sequential training.
class CspStage {
 public:
  CspStage(int stage, int stages, StageSlots slots, const std::vector<Subnet>* sequence, int window);

  int stage() const { return stage_; }
  const StageSlots& slots() const { return slots_; }
  int window() const { return window_; }

  // A resumed run: subnets < k were trained (and checkpointed) before, so
  // they count as finished here and nothing below k is run again.
  void start_at(int k);
  // A checkpoint at k needs every stage to have finished exactly the
  // subnets < k: stage 0 admits no subnet >= k until hold_from is moved on
  // (the pipeline drains to k, as the pipeline engine's flush). Stage 0
  // finishes every subnet last, so once it has finished those below k no
  // subnet >= k is anywhere and every stage's state is that of k sequential
  // steps. Other stages never admit on their own; they ignore it.
  void hold_from(int k) { hold_ = k; }
  int held_from() const { return hold_; }

  // Events, in the order they happen on this stage.
  void forward_ready(int b);   // activation arrived (stages > 0; stage 0 admits by itself)
  void forward_started(int b);
  void backward_ready(int b);  // gradient arrived (last stage: its own forward finished)
  void backward_started(int b);
  void backward_done(int b);   // backward and this subnet's update here are complete

  // The next action to start, or nothing (idle). When `waits` is given, it
  // receives the blocker of every ready forward passed over before the
  // first eligible one (also when a ready backward is chosen).
  std::optional<CspAction> next(std::vector<SubnetWait>* waits = nullptr) const;

  // The earlier unfinished subnet that blocks b's forward and the first
  // shared layer, or nothing when b is eligible.
  std::optional<SubnetWait> blocker(int b) const;
  // True when w and b share a candidate in this stage's layers; `layer`
  // receives the first one.
  bool conflicts(int w, int b, int* layer = nullptr) const;

  bool finished(int b) const { return b < low_ || finished_.count(b) > 0; }
  int oldest_unfinished() const { return low_; }
  int finished_count() const { return finished_total_; }
  int total() const { return static_cast<int>(seq_->size()); }
  bool all_done() const { return low_ >= total(); }

  // The forwards this stage expects to run next, in the order it expects
  // them (ready ones by eligibility, then sequence order), at most `k`: the
  // prediction the prefetcher loads layers for.
  std::vector<int> predicted_forwards(int k) const;

 private:
  bool forward_candidate(int b) const;  // ready (or admissible at stage 0), not started
  std::optional<CspAction> next_forward(std::vector<SubnetWait>* waits) const;
  int stage_, stages_;
  StageSlots slots_;
  const std::vector<Subnet>* seq_;
  int window_;
  int low_ = 0;            // every id < low_ finished here
  int hold_ = 1 << 30;     // stage 0 admits ids below this only (a checkpoint's drain)
  std::set<int> finished_; // finished ids >= low_
  std::set<int> fwd_ready_, fwd_started_, bwd_ready_;
  int finished_total_ = 0;
};

}  // namespace pw::nas

#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <string>

namespace pw::rt {

// A request the coordinator makes by bumping a counter in the store (pause,
// stop, checkpoint) that every stage must act on after the SAME iteration.
// The first stage to see request n proposes "after the next iteration"
// (compare-and-set, so the first proposal wins and every stage reads it).
// That is safe in a flushed schedule: an iteration ends on a stage only
// after every stage has started it, so when any stage has just finished
// iteration `it`, no stage can have finished `it + 1`.
class IterationAgreement {
 public:
  IterationAgreement(c10::intrusive_ptr<c10d::Store> store, std::string counter_key);

  // Called after iteration `it`. True when the next request is due now.
  // `here`: every stage is known to stop at this boundary (all paused),
  // so the request may be agreed for this very boundary.
  bool due_after(std::int64_t it, bool here = false);
  // A request newer than those handled is waiting.
  bool pending() const;

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::string key_;
  std::int64_t handled_ = 0;
  std::int64_t due_ = -1;  // agreed boundary of request handled_ + 1, -1 = not yet agreed
};

// A counter's value without writing (FileStore's add(key, 0) appends a record).
std::int64_t read_counter(c10d::Store& store, const std::string& key);

}  // namespace pw::rt

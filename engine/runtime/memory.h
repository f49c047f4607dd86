#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace pw::rt {

// Counts every byte the process's tensors take on the "device" (on CPU:
// the CPU allocator, which this replaces with a counting wrapper), so the
// budget is enforced on what the stage really holds, not on a prediction.
class TensorBytes {
 public:
  // Installs the counting allocator (idempotent).
  static void install();
  static std::int64_t live();
  // Highest live() since the last reset_peak().
  static std::int64_t peak();
  static void reset_peak();
};

class DeviceMemory;  // device_memory.h

class MemoryBudgetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one stage holds, by category, against the job's device budget.
// Parameters, gradients and optimizer state are summed from the tensors
// themselves; activations are everything else the allocator counts
// (saved activations, received inputs, in-flight outputs, transients);
// swapped-out activations sit in a host pool outside the budget.
struct MemoryBreakdown {
  std::int64_t params = 0, grads = 0, optimizer = 0, stashed = 0, activations = 0, host_pool = 0;
  std::int64_t device_total() const { return params + grads + optimizer + stashed + activations; }
};

class StageMemory {
 public:
  // Metered by the CPU counting allocator.
  StageMemory(int stage, std::int64_t budget_bytes);
  // Metered by `meter`: the allocator of the device the stage's tensors
  // live on (device_memory.h), which outlives the account.
  StageMemory(int stage, std::int64_t budget_bytes, DeviceMemory& meter)
      : stage_(stage), budget_(budget_bytes), meter_(&meter) {}
  DeviceMemory& meter() { return *meter_; }
  // Bytes the process held before the stage's model existed (data sets,
  // receive buffers of the runtime): excluded from the stage's account.
  void set_baseline(std::int64_t bytes) { baseline_ = bytes; }
  std::int64_t baseline() const { return baseline_; }
  void set_static(std::int64_t params, std::int64_t grads, std::int64_t optimizer, std::int64_t stashed);
  void add_host(std::int64_t bytes) { host_ += bytes; }
  // Checks the peak since the last check; throws MemoryBudgetError naming
  // the stage and the categories when it is over budget.
  void check(const char* during);
  MemoryBreakdown now() const;
  std::int64_t peak_bytes() const { return peak_; }
  // The highest held total since the previous call (the checks' peaks and
  // the meter's since the last check), for the iteration's memory sample;
  // starts the next iteration's count. Does not check the budget.
  std::int64_t take_iteration_peak();
  std::int64_t budget() const { return budget_; }

 private:
  int stage_;
  std::int64_t budget_;
  DeviceMemory* meter_;
  std::int64_t baseline_ = 0;
  std::int64_t params_ = 0, grads_ = 0, optimizer_ = 0, stashed_ = 0, host_ = 0;
  std::int64_t peak_ = 0;
  std::int64_t iteration_peak_ = 0;
};

std::string mib(std::int64_t bytes);

}  // namespace pw::rt

#include "runtime/memory.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace pw::rt {
namespace {

std::atomic<std::int64_t> g_live{0};
std::atomic<std::int64_t> g_peak{0};

struct Allocation {
  c10::DataPtr inner;
  std::int64_t bytes;
};

void release(void* ctx) {
  auto* a = static_cast<Allocation*>(ctx);
  g_live.fetch_sub(a->bytes, std::memory_order_relaxed);
  delete a;
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr inner = base_->allocate(n);
    void* data = inner.get();
    auto* a = new Allocation{std::move(inner), static_cast<std::int64_t>(n)};
    std::int64_t live = g_live.fetch_add(a->bytes, std::memory_order_relaxed) + a->bytes;
    std::int64_t p = g_peak.load(std::memory_order_relaxed);
    while (live > p && !g_peak.compare_exchange_weak(p, live, std::memory_order_relaxed)) {
    }
    return {data, a, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

 private:
  c10::Allocator* base_;
};
}  // namespace

void TensorBytes::install() {
  static CountingAllocator* alloc = [] {
    auto* a = new CountingAllocator(c10::GetDefaultCPUAllocator());
    c10::SetCPUAllocator(a, /*priority=*/100);
    return a;
  }();
  (void)alloc;
}
std::int64_t TensorBytes::live() { return g_live.load(); }
std::int64_t TensorBytes::peak() { return g_peak.load(); }
void TensorBytes::reset_peak() { g_peak.store(g_live.load()); }

void StageMemory::set_static(std::int64_t params, std::int64_t grads, std::int64_t optimizer, std::int64_t stashed) {
  params_ = params;
  grads_ = grads;
  optimizer_ = optimizer;
  stashed_ = stashed;
}

MemoryBreakdown StageMemory::now() const {
  MemoryBreakdown b;
  b.params = params_;
  b.grads = grads_;
  b.optimizer = optimizer_;
  b.stashed = stashed_;
  b.host_pool = host_;
  std::int64_t held = TensorBytes::live() - baseline_;
  b.activations = std::max<std::int64_t>(0, held - params_ - grads_ - optimizer_ - stashed_);
  return b;
}

void StageMemory::check(const char* during) {
  std::int64_t peak = TensorBytes::peak() - baseline_;
  TensorBytes::reset_peak();
  peak_ = std::max(peak_, peak);
  if (peak <= budget_) return;
  MemoryBreakdown b = now();
  std::int64_t act_peak = std::max<std::int64_t>(0, peak - params_ - grads_ - optimizer_ - stashed_);
  throw MemoryBudgetError("stage " + std::to_string(stage_) + ": memory budget exceeded during " + during + ": " +
                          mib(peak) + " held > budget " + mib(budget_) + " (cluster.memory_gb); parameters " +
                          mib(b.params) + ", gradients " + mib(b.grads) + ", optimizer state " + mib(b.optimizer) +
                          ", stashed weights " + mib(b.stashed) + ", activations " + mib(act_peak));
}

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

}  // namespace pw::rt

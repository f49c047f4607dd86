#include "runtime/memory.h"
#include "runtime/torch_compat.h"

#include "runtime/device_memory.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace pw::rt {
namespace {

std::atomic<std::int64_t> g_live{0};
std::atomic<std::int64_t> g_peak{0};

// The allocation's size sits in a header before the data, so the data
// pointer can also be the deleter's context: c10's raw_allocate (used by
// some kernels for workspaces) requires that.
constexpr size_t kHeader = 64;  // keeps c10's 64-byte alignment

void release(void* data) {
  if (!data) return;
  auto* base = static_cast<char*>(data) - kHeader;
  std::int64_t bytes = *reinterpret_cast<std::int64_t*>(base);
  g_live.fetch_sub(bytes, std::memory_order_relaxed);
  c10::free_cpu(base);
}

class CountingAllocator final : public compat::HostAllocator {
 public:
  c10::DataPtr allocate_bytes(size_t n) const override {
    auto* base = static_cast<char*>(c10::alloc_cpu(n + kHeader));
    *reinterpret_cast<std::int64_t*>(base) = static_cast<std::int64_t>(n);
    void* data = base + kHeader;
    std::int64_t live = g_live.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed) + n;
    std::int64_t p = g_peak.load(std::memory_order_relaxed);
    while (live > p && !g_peak.compare_exchange_weak(p, live, std::memory_order_relaxed)) {
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
};
}  // namespace

void TensorBytes::install() {
  static CountingAllocator* alloc = [] {
    auto* a = new CountingAllocator();
    c10::SetCPUAllocator(a, /*priority=*/100);
    return a;
  }();
  (void)alloc;
}
std::int64_t TensorBytes::live() { return g_live.load(); }
std::int64_t TensorBytes::peak() { return g_peak.load(); }
void TensorBytes::reset_peak() { g_peak.store(g_live.load()); }

StageMemory::StageMemory(int stage, std::int64_t budget_bytes)
    : StageMemory(stage, budget_bytes, device_memory(c10::Device(c10::kCPU))) {}

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
  std::int64_t held = meter_->live() - baseline_;
  b.activations = std::max<std::int64_t>(0, held - params_ - grads_ - optimizer_ - stashed_);
  return b;
}

void StageMemory::check(const char* during) {
  std::int64_t peak = meter_->peak() - baseline_;
  meter_->reset_peak();
  peak_ = std::max(peak_, peak);
  iteration_peak_ = std::max(iteration_peak_, peak);
  if (peak <= budget_) return;
  MemoryBreakdown b = now();
  std::int64_t act_peak = std::max<std::int64_t>(0, peak - params_ - grads_ - optimizer_ - stashed_);
  throw MemoryBudgetError("stage " + std::to_string(stage_) + ": memory budget exceeded during " + during + ": " +
                          mib(peak) + " held > budget " + mib(budget_) + " (cluster.memory_gb); parameters " +
                          mib(b.params) + ", gradients " + mib(b.grads) + ", optimizer state " + mib(b.optimizer) +
                          ", stashed weights " + mib(b.stashed) + ", activations " + mib(act_peak));
}

std::int64_t StageMemory::take_iteration_peak() {
  const std::int64_t since_check = meter_->peak() - baseline_;
  meter_->reset_peak();
  peak_ = std::max(peak_, since_check);
  const std::int64_t peak = std::max(iteration_peak_, since_check);
  iteration_peak_ = 0;
  return peak;
}

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

}  // namespace pw::rt

#include "runtime/nas/device_cache.h"

#include <stdexcept>
#include <string>

namespace pw::rt::nas {
namespace {
std::int64_t bytes_of(const std::vector<at::Tensor>& ts) {
  std::int64_t b = 0;
  for (const auto& t : ts) b += static_cast<std::int64_t>(t.nbytes());
  return b;
}
}  // namespace

DeviceCache::DeviceCache(CnnSupernet& net, std::int64_t capacity_bytes, torch::Device device, ClockFn clock,
                         TransferFn on_transfer)
    : net_(net), capacity_(capacity_bytes), device_(device), clock_(std::move(clock)),
      on_transfer_(std::move(on_transfer)) {
  const auto& sl = net.slots();
  for (int l = sl.first; l <= sl.last; ++l)
    for (int c = 0; c < net.choices(l); ++c) {
      Candidate& cand = net.candidate(l, c);
      if (cand.params.empty()) continue;  // identity: nothing to hold
      Host h;
      // The host copy owns the values from now on; pinned where a device
      // copies from it asynchronously.
      for (auto& p : cand.params) h.params.push_back(device_.is_cuda() ? p.detach().pin_memory() : p.detach());
      for (auto& t : cand.state) h.state.push_back(device_.is_cuda() ? t.pin_memory() : t);
      cand.params.clear();  // nothing on the device until a load
      cand.state.clear();
      host_.emplace(pw::nas::candidate_key(l, c), std::move(h));
    }
}

Candidate& DeviceCache::cand(std::int64_t key) {
  return net_.candidate(pw::nas::key_layer(key), pw::nas::key_choice(key));
}

void DeviceCache::load(std::int64_t key) {
  auto h = host_.find(key);
  if (h == host_.end()) throw std::logic_error("device cache: no candidate " + std::to_string(key) + " on this stage");
  const std::int64_t p = bytes_of(h->second.params), o = bytes_of(h->second.state);
  // Gradients are reserved now: the backward makes them on the device.
  if (dev_.params + dev_.grads + dev_.optimizer + 2 * p + o > capacity_)
    throw MemoryBudgetError("device cache: loading candidate " + std::to_string(pw::nas::key_choice(key)) +
                            " of layer " + std::to_string(pw::nas::key_layer(key)) + " would hold " +
                            mib(dev_.params + dev_.grads + dev_.optimizer + 2 * p + o) + " > " + mib(capacity_) +
                            " for candidates (search_space.device_budget_gb)");
  const std::int64_t t0 = clock_();
  const bool async = device_.is_cuda();
  Candidate& c = cand(key);
  c.params.clear();
  c.state.clear();
  // copy=true: separate device storage even where host and device are one
  // (CPU), so the round trip is a real one.
  for (const auto& t : h->second.params) {
    at::Tensor d = t.to(device_, async, /*copy=*/true);
    d.set_requires_grad(true);
    c.params.push_back(d);
  }
  for (const auto& t : h->second.state) c.state.push_back(t.to(device_, async, /*copy=*/true));
  dev_.params += p;
  dev_.grads += p;
  dev_.optimizer += o;
  peak_ = std::max(peak_, dev_.device_total());
  resident_[key] = true;
  ++fig_.loads;
  fig_.load_bytes += static_cast<double>(p + o);
  if (on_transfer_) on_transfer_(true, key, t0, clock_(), p + o);
}

void DeviceCache::evict(std::int64_t key, bool sync) {  // sync: the final flush
  if (!resident_.count(key)) throw std::logic_error("device cache: evicting a candidate that is not resident");
  Host& h = host_.at(key);
  Candidate& c = cand(key);
  if (c.params.size() != h.params.size() || c.state.size() != h.state.size())
    throw std::logic_error("device cache: a resident candidate lost tensors");
  const std::int64_t t0 = clock_();
  // Non-blocking into pinned memory on a GPU: the caching allocator keeps
  // the device copy until the stream has read it, and the host copy is
  // next read by a load on the same stream. The final flush is blocking.
  const bool async = device_.is_cuda() && !sync;
  for (size_t i = 0; i < c.params.size(); ++i) {
    if (c.params[i].grad().defined())  // a held candidate is never a victim: its update clears the gradient
      throw std::logic_error("device cache: evicting a candidate with a pending gradient");
    h.params[i].copy_(c.params[i].detach(), async);
  }
  for (size_t i = 0; i < c.state.size(); ++i) h.state[i].copy_(c.state[i], async);
  const std::int64_t p = bytes_of(h.params), o = bytes_of(h.state);
  c.params.clear();
  c.state.clear();
  dev_.params -= p;
  dev_.grads -= p;
  dev_.optimizer -= o;
  resident_.erase(key);
  if (sync) return;  // the final flush: no eviction of the run's
  ++fig_.evictions;
  if (on_transfer_) on_transfer_(false, key, t0, clock_(), p + o);
}

void DeviceCache::apply(const pw::nas::CacheStep& step) {
  std::vector<bool> was_resident;
  for (std::int64_t k : step.keys) was_resident.push_back(resident_.count(k) > 0);
  for (std::int64_t k : step.evict) evict(k, false);
  for (const auto& it : step.load) {
    if (resident_.count(it.key)) throw std::logic_error("device cache: the plan loads a resident candidate");
    load(it.key);
  }
  for (size_t i = 0; i < step.keys.size(); ++i) {
    if (!resident_.count(step.keys[i])) throw std::logic_error("device cache: a use is neither resident nor loaded");
    ++fig_.uses;
    fig_.hits += was_resident[i];
  }
}

std::string DeviceCache::state_bytes() const {
  std::string bytes;
  auto put = [&](const at::Tensor& t) {
    at::Tensor c = t.detach().to(torch::kCPU).contiguous();
    bytes.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  };
  const auto& sl = net_.slots();
  for (int l = sl.first; l <= sl.last; ++l)
    for (int c = 0; c < net_.choices(l); ++c) {
      const std::int64_t key = pw::nas::candidate_key(l, c);
      auto h = host_.find(key);
      if (h == host_.end()) continue;  // identity: nothing held (nor in the supernet's layout)
      const Candidate& cand = net_.candidate(l, c);
      const bool on_device = resident_.count(key) > 0;
      for (const auto& t : on_device ? cand.params : h->second.params) put(t);
      for (const auto& t : on_device ? cand.state : h->second.state) put(t);
    }
  return bytes;
}

void DeviceCache::flush() {
  std::vector<std::int64_t> keys;
  for (const auto& [k, r] : resident_) keys.push_back(k);
  for (auto k : keys) evict(k, true);
  for (auto& [k, h] : host_) {
    Candidate& c = cand(k);
    c.params.clear();
    for (auto& t : h.params) c.params.push_back(t.detach().requires_grad_(true));
    c.state = h.state;
  }
}

}  // namespace pw::rt::nas

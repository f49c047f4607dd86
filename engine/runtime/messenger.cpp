#include "runtime/messenger.h"

#include <torch/version.h>

#include <stdexcept>

namespace pw::rt {

std::optional<MessagingMode> messaging_mode_from_string(const std::string& s) {
  if (s == "tagged") return MessagingMode::Tagged;
  if (s == "ordered") return MessagingMode::Ordered;
  return std::nullopt;
}

std::string to_string(MessagingMode m) { return m == MessagingMode::Tagged ? "tagged" : "ordered"; }

Messenger::Messenger(PG pg, MessagingMode mode)
    : pg_(std::move(pg)), mode_(pg_->getBackendName() == "nccl" ? MessagingMode::Ordered : mode) {}

Messenger::Work Messenger::send(std::vector<at::Tensor>& buf, int peer, int tag) {
  Work w = pg_->send(buf, peer, ordered() ? 0 : tag);
  if (in_group_) group_works_.push_back(w);
  return w;
}

Messenger::Work Messenger::recv(std::vector<at::Tensor>& buf, int peer, int tag) {
  Work w = pg_->recv(buf, peer, ordered() ? 0 : tag);
  if (in_group_) group_works_.push_back(w);
  return w;
}

Messenger::Work Messenger::allreduce(std::vector<at::Tensor>& buf) {
  if (in_group_) throw std::logic_error("Messenger: a collective inside a point-to-point group");
  return pg_->allreduce(buf);
}

// Only NCCL groups operations; Gloo's ProcessGroup (and torch 2.x's Gloo
// backend, which refuses coalescing) posts them as they come.
bool Messenger::coalesces() const { return pg_->getBackendName() == "nccl"; }

void Messenger::begin_group() {
  if (in_group_) throw std::logic_error("Messenger: groups do not nest");
  in_group_ = true;
  group_works_.clear();
  if (!coalesces()) return;
#if TORCH_VERSION_MAJOR >= 2
  // Untested here (Debian's torch is 1.13, without NCCL): 2.x coalesces per device type.
  pg_->startCoalescing(c10::DeviceType::CUDA);
#else
  pg_->startCoalescing();
#endif
}

void Messenger::end_group() {
  if (!in_group_) throw std::logic_error("Messenger: end_group without begin_group");
  in_group_ = false;
  if (!coalesces()) return;
#if TORCH_VERSION_MAJOR >= 2
  pg_->endCoalescing(c10::DeviceType::CUDA);
#else
  pg_->endCoalescing(group_works_);
#endif
  group_works_.clear();
}

}  // namespace pw::rt

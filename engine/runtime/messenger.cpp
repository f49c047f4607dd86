#include "runtime/messenger.h"

#include <torch/version.h>

#include <stdexcept>

namespace pw::rt {
namespace {

// A coalesced operation's handle: completes with its group, whose work is
// known only once the group has ended.
class GroupMemberWork : public c10d::Work {
 public:
  explicit GroupMemberWork(std::shared_ptr<c10::intrusive_ptr<c10d::Work>> group) : group_(std::move(group)) {}
  bool isCompleted() override { return *group_ && (*group_)->isCompleted(); }
  bool wait(std::chrono::milliseconds timeout) override {
    if (!*group_) throw std::logic_error("Messenger: waited on an operation of a group that has not ended");
    return (*group_)->wait(timeout);
  }

 private:
  std::shared_ptr<c10::intrusive_ptr<c10d::Work>> group_;
};

}  // namespace

std::optional<MessagingMode> messaging_mode_from_string(const std::string& s) {
  if (s == "tagged") return MessagingMode::Tagged;
  if (s == "ordered") return MessagingMode::Ordered;
  return std::nullopt;
}

std::string to_string(MessagingMode m) { return m == MessagingMode::Tagged ? "tagged" : "ordered"; }

// A null group is a stage used offline (re-partitioning a checkpoint: its
// layers and optimizer only); it moves no tensor.
Messenger::Messenger(PG pg, MessagingMode mode)
    : pg_(std::move(pg)), mode_(pg_ && pg_->getBackendName() == "nccl" ? MessagingMode::Ordered : mode) {}

const Messenger::PG& Messenger::group() const {
  if (!pg_) throw std::logic_error("Messenger: this stage has no process group (used offline)");
  return pg_;
}

Messenger::Work Messenger::send(std::vector<at::Tensor>& buf, int peer, int tag) {
  return in_group(group()->send(buf, peer, ordered() ? 0 : tag));
}

Messenger::Work Messenger::recv(std::vector<at::Tensor>& buf, int peer, int tag) {
  return in_group(group()->recv(buf, peer, ordered() ? 0 : tag));
}

Messenger::Work Messenger::in_group(Work w) {
  if (!in_group_) return w;
  if (!w) w = c10::make_intrusive<GroupMemberWork>(group_work_);
  group_works_.push_back(w);
  return w;
}

Messenger::Work Messenger::allreduce(std::vector<at::Tensor>& buf) {
  if (in_group_) throw std::logic_error("Messenger: a collective inside a point-to-point group");
  return group()->allreduce(buf);
}

// Only NCCL groups operations; Gloo's ProcessGroup (and torch 2.x's Gloo
// backend, which refuses coalescing) posts them as they come.
bool Messenger::coalesces() const { return pg_ && pg_->getBackendName() == "nccl"; }

void Messenger::begin_group() {
  if (in_group_) throw std::logic_error("Messenger: groups do not nest");
  in_group_ = true;
  group_works_.clear();
  group_work_ = std::make_shared<Work>();
  if (!coalesces()) return;
#if PW_COMM_GROUP_IS_BACKEND
  // Untested (Debian's torch is 1.13, without NCCL): 2.x's Backend::
  // startCoalescing() / endCoalescing() -> the group's Work (c10d/Backend.hpp).
  pg_->startCoalescing();
#else
  pg_->startCoalescing();
#endif
}

void Messenger::end_group() {
  if (!in_group_) throw std::logic_error("Messenger: end_group without begin_group");
  in_group_ = false;
  if (!coalesces()) return;
#if PW_COMM_GROUP_IS_BACKEND
  *group_work_ = pg_->endCoalescing();
#else
  pg_->endCoalescing(group_works_);
#endif
  group_works_.clear();
}

}  // namespace pw::rt

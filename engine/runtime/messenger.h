#pragma once
// Point-to-point tensors and collectives over one c10d process group, for
// every part of the engine that moves tensors between processes (stage
// executors; migration, the CSP trainer and the profiler's link probe can
// take it too). Two modes:
// - tagged: each send names a tag its receive names too, and the transport
//   pairs them by (peer, tag) whatever the order they are posted in. Gloo
//   does this; NCCL does not.
// - ordered: tags are ignored (all 0), so the k-th send from A to B meets
//   the k-th receive on B from A, as under NCCL. The caller must post in an
//   order both ends agree on: the stage executor follows
//   core/schedule/comm_order.h. Run on Gloo, this mode matches exactly as
//   NCCL would, which is how CI tests the order without a GPU.
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "runtime/torch_compat.h"

#include <optional>
#include <string>
#include <vector>

namespace pw::rt {

enum class MessagingMode { Tagged, Ordered };
// "tagged" / "ordered" (cluster.messaging); nullopt otherwise.
std::optional<MessagingMode> messaging_mode_from_string(const std::string& s);
std::string to_string(MessagingMode m);

class Messenger {
 public:
  using PG = c10::intrusive_ptr<compat::CommGroup>;  // c10d's ProcessGroup (1.13) / Backend (2.x)
  using Work = c10::intrusive_ptr<c10d::Work>;

  // NCCL ignores tags: a group over it is always ordered.
  Messenger(PG pg, MessagingMode mode);
  MessagingMode mode() const { return mode_; }
  bool ordered() const { return mode_ == MessagingMode::Ordered; }
  const PG& process_group() const { return pg_; }

  // Post now; `tag` pairs the operation with its peer's in tagged mode and
  // is dropped in ordered mode.
  Work send(std::vector<at::Tensor>& buf, int peer, int tag);
  Work recv(std::vector<at::Tensor>& buf, int peer, int tag);
  Work allreduce(std::vector<at::Tensor>& buf);

  // The operations posted between begin_group and end_group form one
  // group: on NCCL one ncclGroupStart/End (c10d's coalescing), so a
  // receive and a send to different peers in it progress together rather
  // than the first blocking the second on the stream. Gloo posts without
  // blocking the caller, so there the group is the posting order alone.
  // Groups do not nest.
  void begin_group();
  void end_group();

 private:
  Work in_group(Work w);  // records an operation posted inside a group
  bool coalesces() const;
  const PG& group() const;  // pg_, or a logic_error when there is none
  PG pg_;
  MessagingMode mode_;
  bool in_group_ = false;
  std::vector<Work> group_works_;
  // 2.x NCCL: the operations of a coalesced group return no work of their
  // own; each gets a stand-in that waits on the group's, set at end_group.
  std::shared_ptr<Work> group_work_;
};

}  // namespace pw::rt

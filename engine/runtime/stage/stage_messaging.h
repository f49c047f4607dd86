#pragma once
// Activations and gradients between virtual stages, through the Messenger:
// tagged (a tag pairs each send with its receive, receives posted two
// actions ahead of their use) or ordered (every operation posted at the
// point of the schedule's comm order, core/schedule/comm_order.h, so that
// per-pair FIFO matching pairs them, as under NCCL); and a device's
// hand-off between two of its own chunks without a transfer. Owns every
// operation in flight; where peers are comes with each call, from the
// schedule being run (active_schedule.h).
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "core/schedule/comm_order.h"
#include "runtime/device_placement.h"
#include "runtime/messenger.h"
#include "runtime/send_reaper.h"
#include "runtime/stage/active_schedule.h"
#include "runtime/stage/stage_telemetry.h"

namespace pw::rt::stage_impl {

enum Dir : int { kActivation = 0, kGradient = 1 };

class StageMessaging {
 public:
  // Transfers are recorded as events on `telemetry`, which outlives this.
  StageMessaging(Messenger::PG pg, MessagingMode mode, StageDevice placement, StageTelemetry& telemetry);

  // For what is not a transfer between virtual stages (evaluation's own
  // tags, the step's all-reduce).
  Messenger& messenger() { return messenger_; }

  // The activation into `chunk`'s virtual stage (kActivation) or the
  // gradient of its output (kGradient) for microbatch `mb`: from this
  // device's other chunk, or received (waited for here).
  at::Tensor take_recv(const ActiveSchedule& run, Dir dir, int mb, int chunk);
  // `chunk`'s output (kActivation) or input gradient (kGradient) to the
  // next or previous virtual stage; asynchronous.
  void send(const ActiveSchedule& run, Dir dir, int mb, int chunk, const at::Tensor& t);
  void wait_sends();
  // Before action `from` of the run: posts the receives the next actions
  // will need (tagged), so a peer's send never waits on us, or the steps of
  // the comm order due (ordered). Microbatches from `limit_mb` on are not run.
  void prefetch(const ActiveSchedule& run, std::int64_t from, std::int64_t limit_mb = -1);
  // The program of `run` has ended (all of it posted): the next one starts
  // its comm order afresh even where it is allocated where this one was.
  void end_program();

 private:
  struct Comm {
    std::vector<at::Tensor> buf;
    c10::intrusive_ptr<c10d::Work> work;
  };
  int tag(const ActiveSchedule& run, Dir dir, int mb, int vstage) const;
  void post_recv(const ActiveSchedule& run, Dir dir, int mb, int chunk);
  void post_ordered(const ActiveSchedule& run, std::int64_t before, std::int64_t limit_mb);

  Messenger messenger_;
  StageDevice placement_;
  StageTelemetry& telemetry_;
  std::map<std::tuple<int, int, int>, Comm> recvs_;  // (dir, microbatch, chunk)
  // A hand-off between two chunks of this device (the fold of a V-shaped
  // schedule): no transfer, the tensor itself, keyed like `recvs_`.
  std::map<std::tuple<int, int, int>, at::Tensor> local_;
  SendReaper sends_;
  // Ordered messaging: this device's steps of the program's comm order,
  // the next to post, and the outputs made but not yet posted.
  struct OrderedComm {
    const Schedule* program = nullptr;
    int microbatches = 0;
    std::int64_t limit = -1;
    std::vector<CommStep> steps;
    size_t next = 0;
    std::int64_t last_before = -1;
    std::map<std::tuple<int, int, int>, at::Tensor> outbox;  // (dir, microbatch, receiving virtual stage)
  } ordered_;
};

}  // namespace pw::rt::stage_impl

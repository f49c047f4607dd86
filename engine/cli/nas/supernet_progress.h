#pragma once
#include <cstdint>
#include <vector>

#include "core/events/run_recorder.h"
#include "core/nas/subnet_observer.h"

namespace pw::cli {

// A supernet run's subnets finishing, as a pipeline run's iterations: a
// line on the terminal every tenth of the run (unless quiet), and, when the
// run records, a throughput sample per finished subnet on the run's
// timeline (samples/s from the first finished one, the time since the
// previous), what the studio's throughput plot shows for a pipeline run.
// Every record is passed on to `next` (the subnet recorder; may be null).
class SupernetProgress final : public nas::SubnetObserver {
 public:
  SupernetProgress(nas::SubnetObserver* next, RunRecorder* throughput, int subnets, int batch_size, bool show);
  void on_subnet(int id, const std::vector<int>& choices, std::int64_t t_ns) override;
  void on_state(int id, nas::SubnetState state, int stage, std::int64_t t_ns) override;
  void on_wait(const nas::SubnetWait& w) override;
  int finished() const { return done_; }

 private:
  nas::SubnetObserver* next_;
  RunRecorder* throughput_;
  int total_, every_, batch_size_;
  bool show_;
  int done_ = 0;
  std::int64_t first_t_ = -1, last_t_ = -1;
};

}  // namespace pw::cli

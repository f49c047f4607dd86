#include "cli/nas/supernet_progress.h"

#include <algorithm>
#include <iostream>

#include "cli/format.h"

namespace pw::cli {

SupernetProgress::SupernetProgress(nas::SubnetObserver* next, RunRecorder* throughput, int subnets, int batch_size,
                                   bool show)
    : next_(next),
      throughput_(throughput),
      total_(subnets),
      every_(std::max(1, subnets / 10)),
      batch_size_(batch_size),
      show_(show) {}

void SupernetProgress::on_subnet(int id, const std::vector<int>& c, std::int64_t t) {
  if (next_) next_->on_subnet(id, c, t);
}

void SupernetProgress::on_wait(const nas::SubnetWait& w) {
  if (next_) next_->on_wait(w);
}

void SupernetProgress::on_state(int id, nas::SubnetState st, int stage, std::int64_t t) {
  if (next_) next_->on_state(id, st, stage, t);
  if (st != nas::SubnetState::Done) return;
  ++done_;
  if (throughput_) {
    // As the pipeline run's: the rate over what finished after the first,
    // so the start-up (the first subnet fills the pipeline) is not in it.
    ThroughputSample s;
    s.t_ns = t;
    s.iteration = id;
    if (first_t_ >= 0 && t > first_t_) s.samples_per_s = (done_ - 1) * double(batch_size_) / ((t - first_t_) / 1e9);
    if (last_t_ >= 0) s.iteration_ms = (t - last_t_) / 1e6;
    throughput_->throughput(s);
  }
  if (first_t_ < 0) first_t_ = t;
  last_t_ = t;
  if (show_ && (done_ % every_ == 0 || done_ == total_))
    std::cerr << "  subnet " << done_ << "/" << total_ << "  " << fixed(t > 0 ? done_ / (t / 1e9) : 0, 1)
              << " subnets/s since launch\n";
}

}  // namespace pw::cli

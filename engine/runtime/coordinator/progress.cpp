// Following a run: the loop that polls liveness, losses, commands,
// checkpoints and events until every worker has reported its result or
// something fails.
#include "runtime/coordinator/coordinator_impl.h"

#include <cmath>
#include <csignal>
#include <thread>

#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {

void Coordinator::follow(const JobSpec& job) {
  HeartbeatWatch hb(world_, now_s());
  LossProgress progress{start_it_};
  std::int64_t polls = 0;
  while (true) {
    if (opt_.interrupted)
      if (int sig = opt_.interrupted()) {
        result_.interrupted_by = sig;
        return fail(128 + sig, std::string("interrupted by ") + (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"));
      }
    if (a_worker_exited() || a_stage_failed(hb)) return;
    // Results first: a worker reports its last loss before its result, so
    // once every result is in, so is every loss read below.
    bool all = true;
    for (int r = 0; r < world_ && all; ++r) all = store_->check({keys::result(r)});
    read_losses(job, progress);
    take_commands();
    if (!opt_.run_dir.empty()) note_checkpoints();
    if (obs_ && ++polls % 4 == 0) stream_events();
    if (all) return;
    for (auto& e : extensions_) e->poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(extensions_busy() ? 1 : 50));
  }
}

// The losses the last stage reported since the previous round, with the
// throughput and the time left they give.
void Coordinator::read_losses(const JobSpec& job, LossProgress& p) {
  const std::int64_t iterations = job.training.iterations;
  while (p.next < iterations && store_->check({keys::loss(p.next)})) {
    auto j = nlohmann::json::parse(from_bytes(store_->get(keys::loss(p.next))));
    // A diverged iteration's loss is not a number (JSON null).
    double loss = j.at("loss").is_null() ? NAN : j.at("loss").get<double>();
    double t = j.at("t_ns").get<double>() * 1e-9;
    result_.losses.push_back(loss);
    if (p.first_t < 0) {
      p.first_t = t;
      p.first_it = p.next;
    }
    p.last_t = t;
    double sps = 0, eta = 0;
    if (p.next > p.first_it) {
      double per_it = (p.last_t - p.first_t) / static_cast<double>(p.next - p.first_it);
      sps = job.training.batch_size / per_it;
      eta = per_it * static_cast<double>(iterations - p.next - 1);
      result_.samples_per_s = sps;
      result_.iteration_ms = per_it * 1e3;
    }
    if (obs_) obs_->on_iteration(p.next, loss, sps, eta);
    ++p.next;
  }
}

}  // namespace pw::rt::coordinator_impl

#pragma once
#include <mutex>
#include <utility>
#include <vector>

namespace pw::rt {

enum class RunCommand { Pause, Resume, Stop, Checkpoint, Rebalance };

// Requests to a running job from outside it (`pipewright control`, the
// studio, over ipc, through cli/runtime/run_control): any thread posts; the
// coordinator takes them at its next poll (every 50 ms) and turns them into
// store requests the stages agree on (IterationAgreement), so every stage
// pauses, stops or checkpoints after the same iteration; the supernet
// launcher (runtime/nas/csp_launch) takes a stop the same way.
class RunCommands {
 public:
  // What this run can do; set by the coordinator before RunObserver::on_start.
  struct Abilities {
    bool flushes = true;     // pause, stop and checkpoint act at a flush (not PipeDream async)
    bool checkpoints = true;  // the run has a run directory
    bool rebalances = false;  // online replanning is on (the job's runtime.replan)
    // A supernet run's CSP stages agree on a stop at a subnet and on nothing
    // else: pause, resume, checkpoint and rebalance are refused saying so.
    bool only_stop = false;
  };

  void post(RunCommand c) {
    std::lock_guard lk(mu_);
    queue_.push_back(c);
  }
  std::vector<RunCommand> take() {
    std::lock_guard lk(mu_);
    return std::exchange(queue_, {});
  }
  void set_abilities(Abilities a) {
    std::lock_guard lk(mu_);
    abilities_ = a;
  }
  Abilities abilities() const {
    std::lock_guard lk(mu_);
    return abilities_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<RunCommand> queue_;
  Abilities abilities_;
};

}  // namespace pw::rt

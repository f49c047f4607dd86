#pragma once
#include <cstdint>
#include <map>
#include <vector>

namespace pw::nas {

// Per-subnet progress, for the studio's dependency view. Emitted alike by
// the supernet simulator and the engine's CSP trainer; the recorder (db)
// and the telemetry publisher (ipc) implement SubnetObserver.
enum class SubnetState : std::uint8_t {
  Waiting = 0,   // input here, forward held back by CSP (see SubnetWait)
  Forward = 1,   // forward running at `stage`
  Backward = 2,  // backward running at `stage`
  Update = 3,    // its own layers' update at `stage`
  Done = 4,      // finished at every stage (stage 0 updated last)
};
const char* to_string(SubnetState s);

// "waiter waits for waited_for because of choice layer `layer` at `stage`":
// both subnets use the same candidate of that layer and waited_for (the
// earlier one) has not finished its backward and update at that stage.
struct SubnetWait {
  int waiter = 0;
  int waited_for = 0;
  int stage = 0;
  int layer = 0;  // index into SearchSpace::layers
  std::int64_t t_ns = 0;
};

class SubnetObserver {
 public:
  virtual ~SubnetObserver() = default;
  // A subnet entered the pipeline (stage 0 admitted it).
  virtual void on_subnet(int id, const std::vector<int>& choices, std::int64_t t_ns) {}
  virtual void on_state(int id, SubnetState state, int stage, std::int64_t t_ns) {}
  // Reported once per (waiter, stage) and again whenever the blocker changes.
  virtual void on_wait(const SubnetWait& w) {}
};

// One stage's CspStage::next() returns the same waits every time it is asked
// until something changes there; this reports each to the observer once
// (Waiting state + edge, stamped t_ns), and again when a waiter's blocker
// changes. Shared by the simulator and the CSP trainer.
class WaitReporter {
 public:
  // Returns how many waits were new.
  int report(const std::vector<SubnetWait>& waits, std::int64_t t_ns, SubnetObserver* obs);
  // The waiter is past this stage: drop what was reported for it.
  void forget(int waiter) { last_.erase(waiter); }

 private:
  std::map<int, int> last_;  // waiter -> blocker last reported
};

}  // namespace pw::nas

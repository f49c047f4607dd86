#include "core/nas/subnet_observer.h"

namespace pw::nas {

const char* to_string(SubnetState s) {
  switch (s) {
    case SubnetState::Waiting: return "waiting";
    case SubnetState::Forward: return "forward";
    case SubnetState::Backward: return "backward";
    case SubnetState::Update: return "update";
    case SubnetState::Done: return "done";
  }
  return "?";
}

int WaitReporter::report(const std::vector<SubnetWait>& waits, std::int64_t t_ns, SubnetObserver* obs) {
  int fresh = 0;
  for (auto w : waits) {
    auto it = last_.find(w.waiter);
    if (it != last_.end() && it->second == w.waited_for) continue;
    last_[w.waiter] = w.waited_for;
    w.t_ns = t_ns;
    ++fresh;
    if (!obs) continue;
    obs->on_state(w.waiter, SubnetState::Waiting, w.stage, t_ns);
    obs->on_wait(w);
  }
  return fresh;
}

}  // namespace pw::nas

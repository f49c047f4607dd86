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

}  // namespace pw::nas

#include "runtime/nas/stage_policy.h"

#include <algorithm>

namespace pw::rt::nas {

using pw::nas::CspAction;
using pw::nas::CspActionKind;

std::optional<CspAction> StagePolicy::next(const std::function<bool(int)>& in_flight, int first_arrived,
                                           std::vector<pw::nas::SubnetWait>* waits) const {
  if (csp_) return stage_.next(waits);
  auto a = stage_.next();
  if (a && a->kind == CspActionKind::Backward) return a;
  int b = -1;
  if (stage_.stage() == 0) {
    // Stage 0 admits by itself, in sequence order within the window and
    // below a hold (a checkpoint's or a stop's drain).
    const int low = stage_.oldest_unfinished();
    for (int c = low; c < std::min({stage_.total(), low + window_, stage_.held_from()}); ++c)
      if (!in_flight(c) && !stage_.finished(c)) {
        b = c;
        break;
      }
  } else {
    b = first_arrived;
  }
  return b >= 0 ? std::optional<CspAction>({CspActionKind::Forward, b}) : std::nullopt;
}

}  // namespace pw::rt::nas

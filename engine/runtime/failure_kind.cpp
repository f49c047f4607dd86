#include "runtime/failure_kind.h"

#include <gloo/common/error.h>

namespace pw::rt {

FailureKind failure_kind(const std::exception& e) {
  return dynamic_cast<const ::gloo::IoException*>(&e) ? FailureKind::PeerLost : FailureKind::Own;
}

std::string to_string(FailureKind k) { return k == FailureKind::PeerLost ? "peer_lost" : "own"; }

FailureKind failure_kind_from_string(const std::string& s) {
  return s == "peer_lost" ? FailureKind::PeerLost : FailureKind::Own;
}

int stage_to_blame(int reporter, const std::vector<StageFailure>& failures) {
  if (reporter < 0 || reporter >= static_cast<int>(failures.size()) || failures[reporter].message.empty() ||
      failures[reporter].kind != FailureKind::PeerLost)
    return reporter;
  for (int r = 0; r < static_cast<int>(failures.size()); ++r)
    if (!failures[r].message.empty() && failures[r].kind == FailureKind::Own) return r;
  return reporter;
}

}  // namespace pw::rt

#pragma once
#include <exception>
#include <string>
#include <vector>

namespace pw::rt {

// Where a stage's failure started, as far as its error's type tells: a stage
// that fails takes its neighbours down with transport errors, and those may
// reach the coordinator first.
enum class FailureKind {
  Own,       // the stage's own error: a root cause
  PeerLost,  // the transport to a peer broke: usually that peer's failure
};

// By type, never by message: gloo::IoException is what Gloo's transport
// throws when a pair breaks (closed or reset by the peer, an I/O timeout),
// and c10d's Work::wait rethrows it as thrown (tests/runtime/test_failure_kind.cpp
// checks that on a real group). Everything else is the stage's own.
FailureKind failure_kind(const std::exception& e);

// How the kind travels through the store next to the message (worker ->
// coordinator): "own", "peer_lost"; anything else reads as Own.
std::string to_string(FailureKind k);
FailureKind failure_kind_from_string(const std::string& s);

// A stage's reported failure; an empty message: none reported (yet).
struct StageFailure {
  std::string message;
  FailureKind kind = FailureKind::Own;
};

// The stage to blame for `reporter`'s failure: itself, unless it lost a
// peer and another stage reported a failure of its own (the lowest rank).
int stage_to_blame(int reporter, const std::vector<StageFailure>& failures);

}  // namespace pw::rt

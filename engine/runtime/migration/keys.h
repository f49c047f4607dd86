#pragma once
#include <string>

// Store keys of the live-migration control channel (see docs/migration.md).
// Only small JSON and counters go through the store; layer state travels
// over the c10d Gloo group.
namespace pw::rt::migration::keys {
// Online proposals: a counter n, and proposal n -> plan version.
inline const std::string kProposals = "pw/mig/proposals";
inline std::string proposal(long long n) { return "pw/mig/proposal/" + std::to_string(n); }
// Manual "rebalance now" requests (a counter anyone may bump).
inline const std::string kRebalance = "pw/mig/rebalance";
// Plan version v: JSON {plan, reason}; the iteration it takes effect at -> v.
inline std::string plan(int v) { return "pw/mig/plan/" + std::to_string(v); }
inline std::string at(long long it) { return "pw/mig/at/" + std::to_string(it); }
// Two-phase switch: each worker acks (prepared), the coordinator commits,
// each worker reports done (switched, with its stall).
inline std::string ack(int v, int rank) { return "pw/mig/ack/" + std::to_string(v) + "/" + std::to_string(rank); }
inline std::string commit(int v) { return "pw/mig/commit/" + std::to_string(v); }
inline std::string done(int v, int rank) { return "pw/mig/done/" + std::to_string(v) + "/" + std::to_string(rank); }
// Per iteration and rank: JSON {compute_ms, iter_ms, peak, budget}.
inline std::string stat(long long it, int rank) {
  return "pw/mig/stat/" + std::to_string(it) + "/" + std::to_string(rank);
}
}  // namespace pw::rt::migration::keys

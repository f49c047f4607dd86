#pragma once
#include <string>

// Keys the coordinator and the workers exchange through the c10d store.
// The store is the rendezvous point (it also carries Gloo's own setup under
// the "pg/" prefix) and the small control channel; tensors never go here.
namespace pw::rt::keys {
inline const std::string kConfig = "pw/config";  // JSON: job, plan, run options (coordinator)
inline const std::string kAbort = "pw/abort";    // set by the coordinator: workers exit now
inline std::string heartbeat(int rank) { return "pw/hb/" + std::to_string(rank); }  // counter
inline std::string ready(int rank) { return "pw/ready/" + std::to_string(rank); }
inline std::string loss(long long it) { return "pw/loss/" + std::to_string(it); }  // JSON {loss, t_ns}
inline std::string error(int rank) { return "pw/error/" + std::to_string(rank); }
// Set before error(rank): the error's FailureKind (failure_kind.h) as text.
inline std::string error_kind(int rank) { return "pw/error_kind/" + std::to_string(rank); }
// JSON {host, local_rank, gpus}: what the stage sees, for the transport choice (transport_agreement.h).
inline std::string site(int rank) { return "pw/site/" + std::to_string(rank); }
inline std::string result(int rank) { return "pw/result/" + std::to_string(rank); }  // JSON
// Requests from the run's controller (counters; see IterationAgreement).
inline const std::string kPauseRequests = "pw/req/pause";
inline const std::string kResumes = "pw/req/resume";  // pause k ends when this reaches k
inline std::string paused(int rank) { return "pw/paused/" + std::to_string(rank); }  // at iteration
inline const std::string kStopRequests = "pw/req/stop";
inline const std::string kCheckpointRequests = "pw/req/checkpoint";
// The newest checkpoint a stage has written completely (iteration).
inline std::string checkpoint_saved(int rank) { return "pw/ckpt_saved/" + std::to_string(rank); }
}  // namespace pw::rt::keys

#pragma once
#include <string>

// Keys the coordinator and the workers exchange through the c10d TCPStore.
// The store is the rendezvous point (it also carries Gloo's own setup under
// the "pg/" prefix) and the small control channel; tensors never go here.
namespace pw::rt::keys {
inline const std::string kConfig = "pw/config";  // JSON: job, plan, run options (coordinator)
inline const std::string kAbort = "pw/abort";    // set by the coordinator: workers exit now
inline std::string heartbeat(int rank) { return "pw/hb/" + std::to_string(rank); }  // counter
inline std::string ready(int rank) { return "pw/ready/" + std::to_string(rank); }
inline std::string loss(long long it) { return "pw/loss/" + std::to_string(it); }  // JSON {loss, t_ns}
inline std::string checkpoint(long long it) { return "pw/ckpt/" + std::to_string(it); }  // counter
inline std::string error(int rank) { return "pw/error/" + std::to_string(rank); }
inline std::string result(int rank) { return "pw/result/" + std::to_string(rank); }  // JSON
}  // namespace pw::rt::keys

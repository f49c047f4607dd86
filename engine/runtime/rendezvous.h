#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace gloo::transport {
class Device;
}

namespace pw::rt {

struct WorkerEnv;

// The rendezvous store a worker shares with its coordinator. A run whose
// workers the coordinator starts itself on this host uses a c10d FileStore
// in a private directory (PW_STORE_FILE): libtorch 1.13's TCPStore cannot
// bind one address and would listen on every interface for the whole run.
// Workers started by a launcher on other hosts (MASTER_ADDR/MASTER_PORT)
// use the coordinator's TCPStore.
c10::intrusive_ptr<c10d::Store> connect_store(const WorkerEnv& env, std::chrono::milliseconds timeout);

// The network device Gloo binds for tensors, as torch.distributed picks it:
// GLOO_SOCKET_IFNAME (comma-separated interfaces) when set; loopback for a
// single-host run (a FileStore, or a loopback MASTER_ADDR); otherwise the
// address this host's name resolves to (c10d's default device). Never
// MASTER_ADDR's interface: on any host but the master that is not local.
std::shared_ptr<::gloo::transport::Device> gloo_device(const WorkerEnv& env);

// Private directory + FileStore path for a single-host run
// ($TMPDIR/pipewright-run-XXXXXX, local_store_dir.cpp). Removed by the
// destructor; if this process dies first (kill -9), by a small watcher
// process it started, which outlives it; and failing both, by the next
// run on the host: each directory records its owner (pid and start time)
// and a new one removes those whose owner is gone.
class LocalStoreDir {
 public:
  LocalStoreDir();
  ~LocalStoreDir();
  LocalStoreDir(const LocalStoreDir&) = delete;
  LocalStoreDir& operator=(const LocalStoreDir&) = delete;
  const std::string& file() const { return file_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, file_;
  int watch_fd_ = -1;  // the write end of the watcher's pipe: its EOF is our end
};

// Removes the store directories under `tmp` (pipewright-run-*) of this user
// whose recorded owner is no longer running (a pid that is gone, or reused:
// another start time). Returns how many it removed. A directory without an
// owner record is left alone (it may be being made).
int remove_stale_store_dirs(const std::string& tmp);

}  // namespace pw::rt

#include "runtime/rendezvous.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "runtime/worker.h"

namespace pw::rt {
namespace {

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ','))
    if (!part.empty()) out.push_back(part);
  return out;
}
}  // namespace

c10::intrusive_ptr<c10d::Store> connect_store(const WorkerEnv& env, std::chrono::milliseconds timeout) {
  if (!env.store_file.empty()) {
    // numWorkers -1: no process deletes the file; its directory belongs to the coordinator.
    auto s = c10::make_intrusive<c10d::FileStore>(env.store_file, -1);
    s->setTimeout(timeout);
    return s;
  }
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(env.master_port);
  o.isServer = false;
  o.waitWorkers = false;
  o.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const WorkerEnv& env) {
  if (const char* ifs = std::getenv("GLOO_SOCKET_IFNAME"); ifs && *ifs) {
    auto names = split_commas(ifs);
    if (names.empty()) throw std::runtime_error("GLOO_SOCKET_IFNAME is set but names no interface");
    // One device per process: the first interface (c10d would round-robin over several).
    try {
      return c10d::ProcessGroupGloo::createDeviceForInterface(names.front());
    } catch (const std::exception& e) {
      throw std::runtime_error("GLOO_SOCKET_IFNAME: interface \"" + names.front() + "\" cannot be used: " +
                               std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
    }
  }
  if (!env.store_file.empty() || is_loopback(env.master_addr))
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace pw::rt

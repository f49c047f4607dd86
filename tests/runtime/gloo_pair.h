#pragma once
// Two ranks of one real Gloo group inside the test process (a FileStore in
// a private directory), for tests of what crosses c10d.
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <string>
#include <thread>

#include "runtime/process_group.h"
#include "runtime/rendezvous.h"

namespace pw::rt::test {

struct GlooPair {
  LocalStoreDir dir;  // outlives the groups, which read the store's file
  c10::intrusive_ptr<c10d::ProcessGroupGloo> g0, g1;

  explicit GlooPair(const std::string& prefix) {
    auto store = c10::make_intrusive<c10d::FileStore>(dir.file(), 2);
    GlooGroupOptions opt{.prefix = prefix, .timeout = std::chrono::seconds(60), .threads = 1, .device = nullptr};
    // Each rank's constructor waits for the other's: one of them on a thread.
    std::thread t([&] { g1 = make_gloo_group(store, 1, 2, opt); });
    g0 = make_gloo_group(store, 0, 2, opt);
    t.join();
  }
};

}  // namespace pw::rt::test

#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/events/event.h"

namespace pw::test {

// A fresh directory per test, removed afterwards.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/pw_db_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// Records what a producer emits, to check the database against.
struct Capture final : EventSink {
  std::vector<Event> events;
  std::vector<MemorySample> memory;
  EventSink* next = nullptr;
  void on_event(const Event& e) override {
    events.push_back(e);
    if (next) next->on_event(e);
  }
  void on_memory(std::int32_t s, std::int64_t t, std::int64_t b) override {
    memory.push_back({});
    memory.back().stage = s;
    memory.back().t_ns = t;
    memory.back().bytes = b;
    if (next) next->on_memory(s, t, b);
  }
};

inline bool same(const Event& a, const Event& b) {
  return a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.bytes == b.bytes && a.stage == b.stage &&
         a.microbatch == b.microbatch && a.chunk == b.chunk && a.kind == b.kind && a.first_layer == b.first_layer &&
         a.last_layer == b.last_layer && a.replica == b.replica;
}

// A deterministic synthetic event: the i-th of a run.
inline Event synthetic_event(std::int64_t i, int stages = 4) {
  Event e;
  e.stage = static_cast<std::int32_t>(i % stages);
  e.kind = static_cast<EventKind>(i % kEventKindCount);
  e.start_ns = i * 1000;
  e.end_ns = i * 1000 + 500 + (i % 7) * 100;
  e.microbatch = static_cast<std::int32_t>(i % 13);
  e.chunk = static_cast<std::int16_t>(i % 2);
  e.first_layer = static_cast<std::int32_t>(i % 5);
  e.last_layer = e.first_layer + 3;
  e.bytes = i * 3;
  return e;
}

}  // namespace pw::test

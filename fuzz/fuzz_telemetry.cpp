// The telemetry decoder a subscriber runs on every frame pair: the first
// input byte picks the topic frame (a known topic, "" or garbage), the rest
// is the payload. Decoding counts and drops what it cannot accept; any
// exception, crash or sanitizer report is a finding.
#include <cstdint>
#include <string>

#include "ipc/subscriber.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The decoder only: nothing listens on port 1, nothing is received.
  static pw::ipc::Subscriber sub("tcp://127.0.0.1:1");
  if (size == 0) return 0;
  static const char* kTopics[] = {"status", "events", "memory", "throughput", "migrations", "subnets",
                                  "logs",   "plan",   "heartbeat", "",        "eventsX"};
  std::string topic = kTopics[data[0] % (sizeof kTopics / sizeof *kTopics)];
  std::string payload(reinterpret_cast<const char*>(data + 1), size - 1);
  (void)sub.decode(topic, payload);
  return 0;
}

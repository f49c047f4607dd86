// The control server's request path end to end: the input is sent as a
// raw request frame to a ControlServer (with a Publisher, as in a live
// run); the server must answer or count it as malformed, and keep
// answering a well-formed heartbeat afterwards. A hang, crash or sanitizer
// report is a finding.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "ipc/control.h"
#include "ipc/publisher.h"

namespace {
struct Live {
  pw::ipc::Publisher pub{"fuzz-run"};
  pw::ipc::ControlServer server{[](const pw::ipc::pb::ControlRequest&) { return pw::ipc::pb::ControlReply{}; }, &pub};
  pw::ipc::ControlClient raw{server.endpoint(), "fuzz"};
  pw::ipc::ControlClient check{server.endpoint(), "check"};
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static auto* live = new Live;  // never destroyed: libFuzzer exits without unwinding
  live->raw.send_raw(std::string(reinterpret_cast<const char*>(data), size));
  if (!live->check.heartbeat(std::chrono::seconds(5))) std::abort();  // the server stopped answering
  return 0;
}

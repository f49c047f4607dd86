#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace pw {

// One record type for everything that happens on a stage, emitted alike by
// the simulator (virtual clock) and the engine (real clock), recorded in
// the database and sent as telemetry.
enum class EventKind : std::uint8_t {
  Forward = 0,
  Backward = 1,
  Recompute = 2,
  SwapOut = 3,
  SwapIn = 4,
  Send = 5,
  Recv = 6,
  OptimizerStep = 7,
  Migrate = 8,
  Idle = 9,
  BackwardInput = 10,   // B of a split backward: the input gradient
  BackwardWeight = 11,  // W of a split backward: the weight gradients
  // One bucket of a stage's gradients all-reduced over the stage's replicas
  // (data parallelism); bytes: the bucket's.
  AllReduce = 12,
  // The all-reduces of a stage's tensor-parallel group (parallel.tensor):
  // Megatron's two per transformer layer in the forward (of activations)
  // and two in the backward (of their gradients), blocking the stage's
  // compute; one event per action, over the layers it ran; bytes: what
  // each rank all-reduced. Appended, so recordings keep their numbers.
  TensorAllReduce = 13,
};
constexpr int kEventKindCount = 14;

const char* to_string(EventKind k);
std::optional<EventKind> event_kind_from_string(const std::string& s);

struct Event {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t bytes = 0;
  std::int32_t stage = 0;       // device / worker index
  std::int32_t microbatch = -1; // or subnet id for CSP; -1 if none
  std::int16_t chunk = 0;       // model chunk (interleaved) on this stage
  // Which replica of the pipeline (parallel.data) the stage belongs to.
  // The simulator runs replica 0 (the others run alike); the engine's
  // workers stamp their own.
  std::int16_t replica = 0;
  EventKind kind = EventKind::Idle;
  std::int32_t first_layer = -1;
  std::int32_t last_layer = -1;
};

// Receives events as they are produced. Implementations must be cheap:
// the simulator calls them tens of millions of times per second.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_event(const Event& e) = 0;
  // Resident bytes of a stage changed (activations, swaps, stashes).
  virtual void on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) {}
};

}  // namespace pw

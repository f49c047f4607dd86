#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cli/interrupt.h"
#include "cli/run_outputs.h"
#include "core/events/event.h"

namespace pw::cli {

class SimTelemetry;  // cli/ipc/sim_telemetry.h, where the build has ipc

// The control of every `pipewright simulate`, the pipeline's and a supernet
// job's alike: the simulator's events go through it to every output (--trace,
// --db, --listen), and before each event it
// - with --db or --listen, ends the run "interrupted" on SIGINT/SIGTERM
//   (exit 128 + signal), never leaving it "running";
// - with --listen, answers the control server (pause, resume, stop, status)
//   and keeps --pace against the wall clock.
// Made after outputs.begin(); run() finishes the outputs on every way out
// but success, which the command finishes itself (with its summary and --linger).
class SimulationControl final : public EventSink {
 public:
  SimulationControl(RunOutputs& outputs, double pace);
  ~SimulationControl() override;
  SimulationControl(const SimulationControl&) = delete;
  SimulationControl& operator=(const SimulationControl&) = delete;

  void add(EventSink* sink) { sinks_.push_back(sink); }
  // What to hand the simulator: null when nothing records, traces or gates.
  EventSink* sink() { return sinks_.empty() && !gated_ ? nullptr : this; }
  // The end of the last event (ns): the recorded throughput sample's time.
  std::int64_t last_end_ns() const { return last_end_; }

  // Runs the simulation. A control client's stop finishes the run "stopped"
  // and returns false (the command exits 1); a signal finishes it
  // "interrupted", any other error "failed", and both are rethrown.
  bool run(const std::function<void()>& simulate);

  void on_event(const Event& e) override;
  void on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) override;

 private:
  RunOutputs& outputs_;
  // Held while it records: SIGINT/SIGTERM then end the run "interrupted"
  // between two events; the previous handlers return with this object.
  std::optional<InterruptScope> interrupts_;
  std::vector<EventSink*> sinks_;
  bool gated_ = false;
  std::int64_t last_end_ = 0;
#ifdef PW_HAVE_IPC
  std::unique_ptr<SimTelemetry> control_;
#endif
};

}  // namespace pw::cli

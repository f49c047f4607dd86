#include "cli/sim_control.h"

#include <algorithm>
#include <iostream>

#ifdef PW_HAVE_IPC
#include "cli/ipc/sim_telemetry.h"
#endif

namespace pw::cli {

SimulationControl::SimulationControl(RunOutputs& outputs, double pace) : outputs_(outputs) {
  if (outputs_.recording()) {
    interrupts_.emplace();
    gated_ = true;
  }
#ifdef PW_HAVE_IPC
  if (auto* pub = outputs_.publisher()) {
    control_ = std::make_unique<SimTelemetry>(*pub, pace);
    outputs_.set_control_handler([this](const ipc::pb::ControlRequest& r) { return control_->handle(r); });
  }
#endif
}

SimulationControl::~SimulationControl() {
#ifdef PW_HAVE_IPC
  // The control server outlives this (it belongs to the outputs): from here
  // on it answers status queries only.
  if (control_) outputs_.set_control_handler(nullptr);
#endif
}

void SimulationControl::on_event(const Event& e) {
  if (gated_) {
    check_interrupt();
#ifdef PW_HAVE_IPC
    if (control_) control_->gate(e.start_ns);
#endif
  }
  last_end_ = std::max(last_end_, e.end_ns);
  for (auto* s : sinks_) s->on_event(e);
}

void SimulationControl::on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) {
  for (auto* s : sinks_) s->on_memory(stage, t_ns, bytes);
}

bool SimulationControl::run(const std::function<void()>& simulate) {
  try {
    simulate();
    return true;
  } catch (const std::exception& e) {
#ifdef PW_HAVE_IPC
    if (dynamic_cast<const SimStopped*>(&e)) {
      outputs_.finish(RunStatus::Stopped, e.what());
      std::cout << "simulation " << e.what() << "\n";
      return false;
    }
#endif
    outputs_.finish(dynamic_cast<const Interrupted*>(&e) ? RunStatus::Interrupted : RunStatus::Failed, e.what());
    throw;
  }
}

}  // namespace pw::cli

#pragma once
#include <stdexcept>
#include <string>

namespace pw::cli {

// SIGINT/SIGTERM while a command records (simulate --db / --listen): the
// handler only notes the signal; the command checks it between events,
// marks its run "interrupted", removes what advertised the live run, and
// exits 128 + signal, as a shell expects of a killed command.
void catch_interrupts();
// The signal received since catch_interrupts(), or 0.
int interrupt_signal();
// Thrown by the event loop once a signal arrived.
struct Interrupted : std::runtime_error {
  explicit Interrupted(int sig);
  int signal;
};
// Throws Interrupted when a signal arrived.
void check_interrupt();

}  // namespace pw::cli

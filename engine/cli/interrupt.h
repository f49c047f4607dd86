#pragma once
#include <functional>
#include <stdexcept>
#include <string>

namespace pw::cli {

// The one place a command catches SIGINT and SIGTERM. A command that must
// end cleanly on a signal (simulate or run that records, a pipeline or a
// supernet run) holds an InterruptScope while it works: the handler only
// notes the signal's number; the command (or the engine it drives, through
// probe()) checks it at its next safe point, marks its run "interrupted",
// removes what advertised the live run and exits 128 + signal (130 for
// SIGINT, 143 for SIGTERM), as a shell expects of a killed command.
// The previous handlers come back when the scope ends, however it ends
// (a check that throws included). Commands without a scope keep the
// default action: the signal ends them at once.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // The signal received while a scope is held, or 0.
  int signal() const;
  // Throws Interrupted when a signal arrived.
  void check() const;
  // For an engine that knows nothing of signals (the coordinator, the
  // supernet launcher): asks "should the run end, and why" by number.
  std::function<int()> probe() const;

 private:
  struct Saved;
  Saved* saved_;
  bool outermost_;
};

// The signal noted by the scope held now (0 when none is, or none came):
// for code below the command that cannot be handed the scope.
int interrupt_signal();

// Thrown by a check once a signal arrived.
struct Interrupted : std::runtime_error {
  explicit Interrupted(int sig);
  int signal;
};
// Throws Interrupted when a signal arrived.
void check_interrupt();

// "SIGINT", "SIGTERM", else strsignal's name.
std::string signal_name(int sig);

}  // namespace pw::cli

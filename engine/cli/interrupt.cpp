#include "cli/interrupt.h"

#include <csignal>
#include <cstring>

namespace pw::cli {
namespace {
volatile std::sig_atomic_t g_signal = 0;
int g_scopes = 0;  // scopes held; commands set up on one thread
void on_signal(int sig) { g_signal = sig; }
}  // namespace

struct InterruptScope::Saved {
  struct sigaction sigint {}, sigterm {};
};

InterruptScope::InterruptScope() : saved_(new Saved), outermost_(g_scopes++ == 0) {
  // A signal noted by an earlier, finished scope is not this one's.
  if (outermost_) g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &saved_->sigint);
  sigaction(SIGTERM, &sa, &saved_->sigterm);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &saved_->sigint, nullptr);
  sigaction(SIGTERM, &saved_->sigterm, nullptr);
  --g_scopes;
  delete saved_;
}

int InterruptScope::signal() const { return g_signal; }

void InterruptScope::check() const { check_interrupt(); }

std::function<int()> InterruptScope::probe() const {
  return [] { return static_cast<int>(g_signal); };
}

int interrupt_signal() { return g_scopes > 0 ? static_cast<int>(g_signal) : 0; }

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  const char* name = strsignal(sig);
  return name ? name : "signal " + std::to_string(sig);
}

Interrupted::Interrupted(int sig) : std::runtime_error("interrupted by " + signal_name(sig)), signal(sig) {}

void check_interrupt() {
  if (int s = interrupt_signal()) throw Interrupted(s);
}

}  // namespace pw::cli

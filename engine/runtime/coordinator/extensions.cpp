// The extensions' calls that need more than a loop at their call site
// (coordinator_extension.h).
#include "runtime/coordinator/coordinator_impl.h"

namespace pw::rt::coordinator_impl {

bool Coordinator::extensions_busy() const {
  for (const auto& e : extensions_)
    if (e->busy()) return true;
  return false;
}

std::string Coordinator::extensions_failure_context() {
  std::string out;
  for (auto& e : extensions_) out += e->failure_context();
  return out;
}

// Also after a failure: an extension's report of what happened is written.
void Coordinator::after_workers() {
  for (auto& e : extensions_) try {
      e->after_workers(result_, opt_.run_dir);
    } catch (const std::exception& x) {
      fail(1, x.what());
    }
}

}  // namespace pw::rt::coordinator_impl

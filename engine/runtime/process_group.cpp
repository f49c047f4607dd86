#include "runtime/process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

namespace pw::rt {

c10::intrusive_ptr<c10d::ProcessGroupGloo> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                           int world, const GlooGroupOptions& options) {
  auto opts = c10d::ProcessGroupGloo::Options::create(options.timeout);
  opts->devices.push_back(options.device ? options.device
                                         : c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  opts->threads = options.threads;
  c10::intrusive_ptr<c10d::Store> s = store;
  if (!options.prefix.empty()) s = c10::make_intrusive<c10d::PrefixStore>(options.prefix, store);
  return c10::make_intrusive<c10d::ProcessGroupGloo>(s, rank, world, opts);
}

}  // namespace pw::rt

#include "runtime/process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <stdexcept>

#ifdef PW_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

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

c10::intrusive_ptr<compat::CommGroup> make_process_group(const std::string& backend,
                                                          const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                          int world, const GlooGroupOptions& options) {
  if (backend == "gloo") return make_gloo_group(store, rank, world, options);
  if (backend != "nccl") throw std::invalid_argument("make_process_group: unknown backend \"" + backend + "\"");
#ifdef PW_WITH_NCCL
  // Untested (no GPU on the CPU build machine): compiled only against a
  // CUDA libtorch, where ProcessGroupNCCL is a c10d::Backend, which is what
  // compat::CommGroup names there.
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = options.timeout;
  c10::intrusive_ptr<c10d::Store> s = store;
  if (!options.prefix.empty()) s = c10::make_intrusive<c10d::PrefixStore>(options.prefix, store);
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(s, rank, world, opts);
#else
  throw std::runtime_error("this build has no NCCL (configure against a CUDA libtorch for cluster.backend \"nccl\")");
#endif
}

bool nccl_built() {
#ifdef PW_WITH_NCCL
  return true;
#else
  return false;
#endif
}

}  // namespace pw::rt

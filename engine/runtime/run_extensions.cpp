#include "runtime/run_extensions.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "runtime/migration/coordinator_extension.h"
#include "runtime/migration/worker_agent.h"
#include "runtime/torchscript/coordinator_extension.h"

namespace pw::rt {

std::vector<std::unique_ptr<CoordinatorExtension>> coordinator_extensions() {
  std::vector<std::unique_ptr<CoordinatorExtension>> out;
  out.push_back(std::make_unique<TorchScriptExtension>());
  out.push_back(std::make_unique<migration::MigrationExtension>());
  return out;
}

std::vector<std::unique_ptr<StageExtension>> stage_extensions(const StageContext& c, EventSink* events) {
  std::vector<std::unique_ptr<StageExtension>> out;
  out.push_back(std::make_unique<migration::WorkerAgent>(c.job, c.plan, c.schedule, c.rank, c.store, c.pg, c.data,
                                                         events, c.replicas));
  return out;
}

}  // namespace pw::rt

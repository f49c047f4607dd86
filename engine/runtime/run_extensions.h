#pragma once
// The features that take part in every run: the one place they are
// registered (live migration, TorchScript models).
#include <memory>
#include <vector>

#include "runtime/coordinator_extension.h"
#include "runtime/stage_extension.h"

namespace pw::rt {

std::vector<std::unique_ptr<CoordinatorExtension>> coordinator_extensions();
// `events`: where the stage's events end up (the worker's event log); each
// extension that watches events passes them on down this chain.
std::vector<std::unique_ptr<StageExtension>> stage_extensions(const StageContext& context, EventSink* events);

}  // namespace pw::rt

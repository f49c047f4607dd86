#pragma once
#include <QString>
#include <vector>

#include "gui/models/search_model.h"

namespace pw::gui {

// Every search stored in the run database `path` (`pipewright search`),
// oldest first, labelled "<run name>: search <id> (<method>)". Empty for a
// run never searched; throws std::exception (DbRefused...) with the reason
// for a file that is not a readable run.
std::vector<SearchRun> load_searches(const QString& path);

}  // namespace pw::gui

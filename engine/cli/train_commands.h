#pragma once
// The commands that train or measure. They need libtorch (and through it
// Gloo, OpenCV, Qt 5: ~285 shared libraries, 0.4 s and 160 MB before main),
// so they live in the sibling executable pipewright-train; pipewright itself
// (core, db, ipc) hands them the whole command line with exec, so users and
// scripts see one command (docs/ARCHITECTURE.md, "Processes").
#include <string>
#include <vector>

namespace pw::cli {

struct CommandSummary {
  std::string name;
  std::string summary;  // one line: what it does (usage lists it)
};

// Every command of pipewright-train, in usage order: what pipewright forwards
// and lists. Empty in a build without the runtime. The summaries repeat those
// of runtime_commands() and nas_commands(), which pipewright cannot link:
// tests/cli/split.sh fails when the two executables' usage differ.
const std::vector<CommandSummary>& train_commands();

}  // namespace pw::cli

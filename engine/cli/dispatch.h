#pragma once
// The front of both executables (pipewright, pipewright-train): usage,
// --version, `help CMD`, a command by name, a suggestion for a misspelt one.
// One function, so the two answer every command line alike.
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/train_commands.h"

namespace pw::cli {

// `runnable`: the commands this executable runs. `listed`: every command
// usage shows and suggestions choose from, in order (pipewright lists the
// train commands it forwards). Returns the exit status.
int dispatch(const std::vector<std::string>& args, const std::vector<Command>& runnable,
             const std::vector<CommandSummary>& listed);

// The command a command line names: its first word, or CMD of `help CMD`;
// empty for none (usage, --version).
std::string named_command(const std::vector<std::string>& args);

}  // namespace pw::cli

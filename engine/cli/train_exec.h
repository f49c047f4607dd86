#pragma once
// pipewright's hand-over to pipewright-train (cli/train_commands.h).

namespace pw::cli {

// Replaces this process with pipewright-train, found next to this executable
// (/proc/self/exe: the installed bin/ or the build folder), with the same
// argv, so exit codes, signals, stdin/stdout/stderr and the process id are
// the train command's own. Returns only if it cannot: the message names the
// file it looked for; the status is a shell's (127 missing, 126 not runnable).
int exec_train(char** argv);

}  // namespace pw::cli

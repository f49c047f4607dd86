#pragma once
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace pw::rt {

// The one way Pipewright starts a helper program (stage workers, the CSP
// supernet workers, the search): fork + exec, with `env` set in the child
// only. With `die_with_parent`, the child is SIGKILLed when the process that
// started it dies, even by SIGKILL, so a crashed coordinator leaves no
// orphans. Throws std::runtime_error when fork fails; an exec failure shows
// as the child's exit status 127.
pid_t spawn_child(const std::vector<std::string>& argv,
                  const std::vector<std::pair<std::string, std::string>>& env = {}, bool die_with_parent = true);

// A program shipped next to this executable: $<env_override> when set, else
// the first of `relative_candidates` (relative to this executable's folder)
// that exists. Empty when none does, so each caller says what it needs.
std::string find_sibling_program(const char* env_override, const std::vector<std::string>& relative_candidates);

}  // namespace pw::rt

#include "cli/train_exec.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

namespace pw::cli {

int exec_train(char** argv) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path train = (ec ? fs::path("pipewright") : self).parent_path() / "pipewright-train";
  execv(train.c_str(), argv);
  const int err = errno;
  std::cerr << "pipewright: \"" << argv[1] << "\" trains or measures with libtorch, which pipewright leaves to "
            << "pipewright-train; cannot run " << train.string() << ": " << std::strerror(err)
            << " (install pipewright-train in the same folder as pipewright)\n";
  return err == ENOENT ? 127 : 126;
}

}  // namespace pw::cli

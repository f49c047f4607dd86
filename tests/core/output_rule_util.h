#pragma once
// What the output-rule tests (test_checked_write, test_output_inputs) share:
// a private temporary directory, files read and written whole, and the
// message of the OutputRefused a call throws.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/io/checked_write.h"

namespace pw::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "pw-output-rule") {
    std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::string read(const std::string& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void put(const std::string& f, const std::string& text) { std::ofstream(f, std::ios::binary) << text; }

// The message of the refusal `f` throws (empty: none thrown); a refusal is
// always one the CLI reports as such (exit 2).
template <typename F>
std::string refusal(F f) {
  try {
    f();
  } catch (const OutputRefused& e) {
    EXPECT_TRUE(is_refusal(e));
    return e.what();
  }
  return {};
}

}  // namespace pw::test

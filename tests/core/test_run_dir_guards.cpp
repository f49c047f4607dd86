// A run directory's guards (issue 41): the lock one run holds on it
// (core/io/run_dir_lock.h) and the checkpoint index a resume reads back
// without trusting it (core/io/checkpoint_index.h).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/io/checkpoint_index.h"
#include "core/io/run_dir_lock.h"

namespace fs = std::filesystem;
using namespace pw;

namespace {

struct TmpDir {
  fs::path dir = fs::temp_directory_path() / ("pw-guards-" + std::to_string(getpid()));
  TmpDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TmpDir() { fs::remove_all(dir); }
};

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const CheckpointRefused& e) {
    return e.what();
  }
  return "(not refused)";
}

// A run directory with a complete checkpoint at iteration 4 of two stages.
struct Checkpointed : TmpDir {
  std::vector<std::string> files{"stage0.pt", "stage1.pt"};
  Checkpointed() {
    put(dir / "checkpoint/4/stage0.pt", std::string(3000, 'a'));
    put(dir / "checkpoint/4/stage1.pt", "bytes of stage one");
    write_checkpoint_index(dir.string(), "iteration", 4, files);
  }
  nlohmann::json meta() { return nlohmann::json::parse(std::ifstream(dir / "checkpoint/meta.json")); }
  void set(const std::string& key, const nlohmann::json& v) {
    auto m = meta();
    m[key] = v;
    put(dir / "checkpoint/meta.json", m.dump());
  }
  std::string read() {
    return refusal([&] { read_checkpoint_index(dir.string(), "iteration", files); });
  }
};

}  // namespace

TEST(CheckpointIndex, ReadsBackWhatWasWritten) {
  Checkpointed c;
  auto meta = c.meta();
  EXPECT_EQ(meta["dir"], "checkpoint/4");
  EXPECT_EQ(meta["files"]["stage0.pt"]["bytes"], 3000);
  EXPECT_EQ(meta["files"]["stage0.pt"]["fnv1a64"].get<std::string>().size(), 16u);
  CheckpointIndex i = read_checkpoint_index(c.dir.string(), "iteration", c.files);
  EXPECT_EQ(i.position, 4);
  EXPECT_EQ(i.dir, (c.dir / "checkpoint/4").string());
}

TEST(CheckpointIndex, FnvOfAKnownString) {
  TmpDir t;
  put(t.dir / "a", "a");
  EXPECT_EQ(digest_file((t.dir / "a").string()).fnv1a64, "af63dc4c8601ec8c");  // FNV-1a 64 of "a"
}

TEST(CheckpointIndex, RefusesADirectoryOutsideTheRun) {
  Checkpointed c;
  c.set("dir", "../../../../etc");
  EXPECT_NE(c.read().find("meta.json: \"dir\" is \"../../../../etc\", not \"checkpoint/4\""), std::string::npos)
      << c.read();
}

TEST(CheckpointIndex, RefusesPositionsThatAreNotAStep) {
  Checkpointed c;
  c.set("iteration", "abc");
  EXPECT_NE(c.read().find("\"iteration\" is \"abc\", not an integer"), std::string::npos) << c.read();
  c.set("iteration", -1);
  EXPECT_NE(c.read().find("\"iteration\" is -1"), std::string::npos) << c.read();
  c.set("iteration", 0);
  EXPECT_NE(c.read().find("\"iteration\" is 0"), std::string::npos) << c.read();
  c.set("iteration", 1ULL << 63);
  EXPECT_NE(c.read().find("\"iteration\" is 9223372036854775808"), std::string::npos) << c.read();
  c.set("iteration", 1LL << 62);
  EXPECT_NE(c.read().find("\"dir\" is \"checkpoint/4\", not \"checkpoint/4611686018427387904\""), std::string::npos)
      << c.read();
  c.set("dir", "checkpoint/4611686018427387904");  // forged consistently: a directory that is not there
  EXPECT_NE(c.read().find("checkpoint/4611686018427387904, which is not a directory"), std::string::npos) << c.read();
}

TEST(CheckpointIndex, RefusesEmptyAndDeepIndexesNamingTheFile) {
  Checkpointed c;
  put(c.dir / "checkpoint/meta.json", "");
  EXPECT_NE(c.read().find("meta.json: not a checkpoint index"), std::string::npos) << c.read();
  put(c.dir / "checkpoint/meta.json", std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_NE(c.read().find("meta.json: not a checkpoint index"), std::string::npos) << c.read();
  EXPECT_EQ(c.read().find("json.exception"), std::string::npos) << c.read();
}

TEST(CheckpointIndex, RefusesIncompleteAlteredOrLinkedFiles) {
  Checkpointed c;
  fs::resize_file(c.dir / "checkpoint/4/stage0.pt", 100);
  EXPECT_NE(c.read().find("stage0.pt: 100 bytes, "), std::string::npos) << c.read();
  put(c.dir / "checkpoint/4/stage0.pt", std::string(2999, 'a') + "b");
  EXPECT_NE(c.read().find("stage0.pt: its content differs from the digest"), std::string::npos) << c.read();
  put(c.dir / "elsewhere", std::string(3000, 'a'));
  fs::remove(c.dir / "checkpoint/4/stage0.pt");
  fs::create_symlink(c.dir / "elsewhere", c.dir / "checkpoint/4/stage0.pt");
  EXPECT_NE(c.read().find("stage0.pt: a link"), std::string::npos) << c.read();
}

TEST(CheckpointIndex, RefusesAnotherStageCountOrNoRecords) {
  Checkpointed c;
  EXPECT_NE(refusal([&] { read_checkpoint_index(c.dir.string(), "iteration", {"stage0.pt"}); })
                .find("not expected stage1.pt"),
            std::string::npos);
  c.set("files", nullptr);
  EXPECT_NE(c.read().find("no \"files\""), std::string::npos) << c.read();
}

TEST(RunDirLock, OneProcessAtATimeNamingTheHolder) {
  TmpDir t;
  const std::string dir = t.dir.string();
  {
    auto a = RunDirLock::acquire(dir);
    EXPECT_EQ(RunDirLock::acquire(dir + "/."), a) << "the same process shares its lock";
    std::ifstream in(a->file());
    std::string note((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(note.rfind("pid " + std::to_string(getpid()) + ": ", 0), 0u) << note;
    pid_t child = fork();
    if (child == 0) {
      try {
        RunDirLock::acquire(dir);
      } catch (const RunDirBusy& e) {
        _exit(std::string(e.what()).find("in use by pid " + std::to_string(getppid()) + ": ") != std::string::npos ? 0
                                                                                                                  : 2);
      }
      _exit(1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "another process is refused, naming this one";
  }
  EXPECT_FALSE(fs::exists(t.dir / RunDirLock::kFileName)) << "the lock file goes with its holder";
  pid_t child = fork();
  if (child == 0) {
    try {
      RunDirLock::acquire(dir);
      _exit(0);
    } catch (...) {
      _exit(1);
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "released, the directory takes another process";
}

TEST(CheckpointIndex, AFileOnAnotherHostIsTakenOnlyByAnAttachedResume) {
  TmpDir t;
  put(t.dir / "checkpoint/2/stage0.pt", "here");
  write_checkpoint_index(t.dir.string(), "iteration", 2, {"stage0.pt", "stage1.pt"}, /*elsewhere_if_missing=*/true);
  EXPECT_NE(refusal([&] { read_checkpoint_index(t.dir.string(), "iteration", {"stage0.pt", "stage1.pt"}); })
                .find("\"files\".stage1.pt was saved on another host"),
            std::string::npos);
  EXPECT_EQ(read_checkpoint_index(t.dir.string(), "iteration", {"stage0.pt", "stage1.pt"}, true).position, 2);
  put(t.dir / "checkpoint/2/stage0.pt", "HERE");  // the local one is still checked
  EXPECT_NE(refusal([&] { read_checkpoint_index(t.dir.string(), "iteration", {"stage0.pt", "stage1.pt"}, true); })
                .find("stage0.pt: its content differs"),
            std::string::npos);
}

#pragma once
// A run directory's checkpoint index, RUN_DIR/checkpoint/meta.json: the
// newest checkpoint every stage completed, and each of its files' size and
// FNV-1a 64 digest taken when it was complete. Pipeline runs (key
// "iteration") and supernet runs (key "subnet") share the layout:
//   {"iteration": 4, "dir": "checkpoint/4",
//    "files": {"stage0.pt": {"bytes": 1234, "fnv1a64": "89ab..."}, ...}}
// A resume reads it through read_checkpoint_index, which trusts nothing in
// it: the position, the directory and every file are checked before a
// process is started or a file of the run is touched. POSIX only.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/spec/refusal.h"

namespace pw {

// A checkpoint a resume cannot use (exit 2): the message names the file and
// the field or the reason, never a library's text.
struct CheckpointRefused : std::runtime_error, Refusal {
  using std::runtime_error::runtime_error;
};

struct FileDigest {
  std::uint64_t bytes = 0;
  std::string fnv1a64;  // 16 lowercase hex digits
};

// Size and FNV-1a 64 of a file's bytes. Throws CheckpointRefused naming the
// file when it cannot be read.
FileDigest digest_file(const std::string& path);

struct CheckpointIndex {
  std::int64_t position = 0;  // the iteration (pipeline) or subnet (supernet) saved
  std::string dir;            // RUN_DIR/checkpoint/<position>
  std::string index_file;     // RUN_DIR/checkpoint/meta.json, for messages
};

// Writes RUN_DIR/checkpoint/meta.json (atomically) for the complete
// checkpoint RUN_DIR/checkpoint/<position>, digesting `files` (names
// within it). With `elsewhere_if_missing` (an --attach run, whose workers
// on other hosts save there) a file this host lacks is recorded as
// {"elsewhere": true} instead of failing. Throws WriteError on a failed write.
void write_checkpoint_index(const std::string& run_dir, const std::string& key, std::int64_t position,
                            const std::vector<std::string>& files, bool elsewhere_if_missing = false);

// Reads and checks RUN_DIR/checkpoint/meta.json: a bounded JSON object;
// `key` an integer >= 1; "dir" exactly checkpoint/<position> (a checkpoint
// lives in its run directory), a real directory there, not a link; its
// file list exactly `files`, each a regular file of the recorded size and
// digest. A file recorded as elsewhere is accepted unchecked only with
// `accept_elsewhere` (an --attach resume: the worker on that host loads it);
// otherwise refused. Throws CheckpointRefused naming the file and what is wrong.
CheckpointIndex read_checkpoint_index(const std::string& run_dir, const std::string& key,
                                      const std::vector<std::string>& files, bool accept_elsewhere = false);

}  // namespace pw

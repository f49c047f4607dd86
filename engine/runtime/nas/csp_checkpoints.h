#pragma once
// A supernet run directory's checkpoints (the pipeline engine's layout and
// rule): checkpoint/<k>/stage<r>.{bin,json} per stage, the JSON written
// last, and checkpoint/meta.json (core/io/checkpoint_index.h) naming the
// newest one every stage completed.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pw::rt::nas {

// The newest complete checkpoint of a supernet run directory: its subnet,
// its directory and each stage's part (stage<r>.json). Throws naming the
// directory when there is none or it is incomplete (CheckpointRefused
// naming the file and field when a part is damaged).
struct CspResumePoint {
  int subnet = 0;
  std::string dir;
  std::vector<nlohmann::json> stages;
};
CspResumePoint read_csp_resume_point(const std::string& run_dir, int workers);

// A checkpoint directory's name: a subnet number (digits only).
bool is_checkpoint_name(const std::string& name);

// The newest checkpoint every stage completed becomes meta.json's (atomic
// rename), and older ones go. A stage never writes into a checkpoint the
// others have not completed (they drain to it together), so nothing
// removed is in use. `last`: the one noted before, updated. Returns the
// error instead of throwing: the launcher must still end and reap its
// workers (a full disk fails the run naming the file).
std::string note_csp_checkpoints(const std::string& out_dir, int workers, int* last);

}  // namespace pw::rt::nas

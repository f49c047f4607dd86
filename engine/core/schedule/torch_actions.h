#pragma once
// A schedule as torch.distributed.pipelining's action list (issue 28), so a
// user can run our order on PyTorch's own runtime. Format: the
// "compute_only" CSV of PipelineScheduleMulti._dump_csv / _load_csv in
// PyTorch 2.6 (torch/distributed/pipelining/schedules.py): one row per
// rank (our device), each cell one `_Action` as its __repr__ writes it,
// `{stage_index}{type}{microbatch}` with the global stage index (our
// virtual stage) and type F (forward), I (input gradient, our B), W
// (weight gradients) or B (full backward), e.g. `0F1`, `0I1`, `0W1`.
// The optimizer step is not an action there (PyTorch steps outside the
// schedule). Not run on PyTorch here: no Python torch on this machine.
#include <string>
#include <vector>

#include "core/schedule/schedule.h"

namespace pw {

// Throws std::invalid_argument for a schedule without a flush (PipeDream).
std::string torch_schedule_csv(const Schedule& s);

// The per-device orders a CSV holds, each ending with the optimizer step,
// for a placement of `s`'s shape (stage indices mapped back through
// s.device_of_virtual_stage / chunk_of_virtual_stage). Throws
// std::invalid_argument naming the row and cell of anything it cannot read
// or that belongs to another device.
std::vector<std::vector<Action>> parse_torch_schedule_csv(const std::string& csv, const Schedule& s);

}  // namespace pw

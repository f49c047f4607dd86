#pragma once
#include <optional>
#include <string>

#include "core/spec/job_spec.h"

namespace pw {

// Whether t tensor ranks can split the model's transformer layers the way
// the cost model prices them and the engine builds them (Megatron-LM's
// split): attention by heads, the FFN by its width, the token embedding and
// the LM head by vocabulary. One rule for the job check (parse_job), the
// planner's parallel.tensor "auto" (which skips such t and says why) and the
// engine (check_tensor_parallel), so a plan never chooses a t the run
// refuses. Returns why not, a sentence naming the model field (the caller
// raises it on parallel.tensor), or nullopt when t splits every one.
//
// The vocabulary is not padded: Megatron pads it to a multiple of 128 x t
// (GPT-2's 50257 to 51200 at t = 8), but the padded rows are tokens the data
// never holds, trained against and counted in memory as real ones; the
// reason names the padded size so the user can choose it in model.vocab.
std::optional<std::string> tensor_split_refusal(const ModelSpec& m, int t);

}  // namespace pw

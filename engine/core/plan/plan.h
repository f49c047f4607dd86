#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/layout/plan_layout.h"

namespace pw {

// Equal layer counts per stage, every layer kept: the Megatron/DeepSpeed
// default and the fallback when no planner is named.
Plan uniform_partition(int layers, int stages);

nlohmann::json to_json(const Plan& plan);
Plan plan_from_json(const nlohmann::json& j);

// Number of layers whose stage differs between two plans of one model.
int layers_moved(const Plan& from, const Plan& to);

}  // namespace pw

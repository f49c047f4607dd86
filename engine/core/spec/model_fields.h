#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/spec/job_spec.h"

namespace pw {

// The model section's fields as data, one row per ModelSpec member as the
// job writes it (parse_model in job_spec.cpp reads each where its row
// says, and asks model_field for the rows it reads, so a field parsed
// without a row fails every parse of it): the resume check compares
// exactly the rows that shape the weights a checkpoint holds, so a field
// added here is compared on resume without a second list.
struct ModelField {
  using Member = std::variant<std::string ModelSpec::*, int ModelSpec::*, double ModelSpec::*,
                              std::vector<int> ModelSpec::*, std::vector<std::int64_t> ModelSpec::*>;
  std::string_view path;  // "model.layers"
  Member member;
  // The model.kind values whose jobs write it; empty: every kind. Two keys
  // may fill one member (an MLP's widths, a CNN's channels): the kind says
  // which one a job names.
  std::vector<std::string_view> kinds;
  // Part of what the checkpoint's parameters and optimizer state were
  // built from (layer count and sizes, classes, input): a resume may not
  // change it. Costs, precision and where a profile came from may change.
  bool shapes_weights = false;

  bool applies_to(const std::string& kind) const;
  // The member's value in `m`, as JSON (how a refusal prints it).
  nlohmann::json value(const ModelSpec& m) const;
};

// Every row, in the order a resume compares them (model.kind first).
const std::vector<ModelField>& model_fields();
// The row of `path` (as a job writes it: "model.input.shape"); throws
// std::logic_error naming it when there is none: a parser reading a model
// field the table lacks is a programming error, caught by any parse of it.
const ModelField& model_field(std::string_view path);

}  // namespace pw

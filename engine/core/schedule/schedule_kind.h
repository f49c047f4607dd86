#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pw {

enum class ScheduleKind {
  GPipe,          // fill-drain: all forwards, then all backwards, flush
  OneFOneB,       // 1F1B with a flush at the end of each iteration
  AsyncOneFOneB,  // PipeDream: 1F1B without flush, weight stashing
  Interleaved,    // Megatron interleaved 1F1B, `chunks` model chunks per device
  CSP,            // NASPipe causal synchronous parallel (supernets)
};

std::string to_string(ScheduleKind k);
std::optional<ScheduleKind> schedule_kind_from_string(const std::string& s);
std::vector<std::string> schedule_kind_names();

}  // namespace pw

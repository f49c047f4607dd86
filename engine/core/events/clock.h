#pragma once
#include <chrono>
#include <cstdint>

namespace pw {

// The clock every real event is stamped with: the steady clock, which all
// processes on one host share, so workers, the coordinator's throughput
// samples and the studio's timeline agree without translation.
inline std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Wall-clock time for what people read as a date (a run's start and end,
// telemetry send times): the system clock, unlike event times.
inline std::int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace pw

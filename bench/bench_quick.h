// PW_BENCH_QUICK=1 (`scripts/bench --quick`, CI's smoke run): every
// benchmark program runs every section on smaller inputs (fewer events,
// repetitions, iterations, shorter durations), so a benchmark that crashes
// or stops shows up in minutes. The figures it then prints say that the
// code ran, not how fast it is; without the variable nothing changes.
#pragma once

#include <cstdlib>
#include <string_view>

namespace pw::bench {

inline bool quick() {
  const char* v = std::getenv("PW_BENCH_QUICK");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

// The quick value under PW_BENCH_QUICK, else the benchmark's own.
template <class T>
T quick_or(T quick_value, T full_value) {
  return quick() ? quick_value : full_value;
}

}  // namespace pw::bench

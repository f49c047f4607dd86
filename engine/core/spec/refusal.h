#pragma once
#include <exception>
#include <stdexcept>

namespace pw {

// Marks an exception as a refusal rather than a failure: an existing or
// foreign --db file, a database another process is writing, a damaged or
// hostile run database, an endpoint that cannot be bound. The command line
// prints it and exits 2, like a bad job spec. A tag, not an exception type,
// so that each layer's refusal stays its own error type (db::DbError...)
// with exactly one std::exception base.
struct Refusal {
  virtual ~Refusal() = default;
};

// A refusal of a layer with no error type of its own.
struct RefusedError : std::runtime_error, Refusal {
  using std::runtime_error::runtime_error;
};

inline bool is_refusal(const std::exception& e) { return dynamic_cast<const Refusal*>(&e) != nullptr; }

}  // namespace pw

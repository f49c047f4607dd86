#pragma once
#include <stdexcept>
#include <string>

#include "core/spec/refusal.h"

namespace pw::db {

// Every failure of pw_db: the message names the file and the reason.
struct DbError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A file refused before anything is read from or written to it (a foreign
// or existing file for the writer, another writer's lock, a damaged or
// hostile run for the reader): the command exits 2 (pw::Refusal).
struct DbRefused : DbError, Refusal {
  using DbError::DbError;
};
// Damage in a recording, whether found when it is opened or in the middle
// of a query: pages SQLite finds corrupt, tables or columns that are not
// the ones the writer made, a JSON column that does not parse or is not
// the document it should be. One type for all of it, so that every command
// has one path for a damaged file: exit 2 (a refusal), the file named, the
// reason in our words rather than SQLite's or the JSON library's.
struct DamagedRecording : DbRefused {
  DamagedRecording(const std::string& path, const std::string& reason)
      : DbRefused(path + ": damaged recording: " + reason) {}
};

}  // namespace pw::db

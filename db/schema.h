#pragma once
#include <string>

namespace pw::db {

class Connection;

// The run database's schema version (docs/database.md). A new minor version
// only adds tables or nullable columns, so older readers still read it; a
// new major version changes meaning, and readers refuse it.
constexpr int kSchemaMajor = 1;
constexpr int kSchemaMinor = 0;
constexpr const char* kFormatName = "pipewright-run";

// Creates every table and index of the current version in an empty file.
void create_schema(Connection& c);

// The events index is built when the run finishes (one sorted build costs
// far less than updating a B-tree per event while recording). Until then,
// and in a crashed run, range queries scan; they are correct, only slower.
void create_deferred_indexes(Connection& c);
bool has_deferred_indexes(Connection& c);

// Checks that the file is a Pipewright run this build can read; throws
// DbError with the reason (not SQLite, damaged, not a run, newer major).
// Returns "major.minor" of the file.
std::string check_schema(Connection& c);

// Cheap checks before SQLite sees the file, for clearer messages: missing,
// empty, not SQLite, shorter than its header says.
void check_file(const std::string& path);

}  // namespace pw::db

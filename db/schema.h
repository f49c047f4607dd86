#pragma once
#include <cstdint>
#include <string>

namespace pw::db {

class Connection;

// The run database's schema version (docs/database.md). A new minor version
// only adds tables or nullable columns, so older readers still read it; a
// new major version changes meaning, and readers refuse it.
constexpr int kSchemaMajor = 1;
// 1.1: searches, search_subnets; 1.2: events.replica; 1.3: memory.replica;
// 1.4: memory.peak
constexpr int kSchemaMinor = 4;
constexpr const char* kFormatName = "pipewright-run";

// Creates every table and index of the current version in an empty file.
void create_schema(Connection& c);

// Whether the events table has the replica column (1.2): older files hold
// one pipeline, read as replica 0.
bool events_have_replica(Connection& c);
// Whether the memory table has the replica column (1.3): older files' memory
// samples are read as replica 0's (a 1.2 run with replicas recorded none of
// theirs apart).
bool memory_has_replica(Connection& c);
// Whether the memory table has the peak column (1.4): older files' stage
// peaks are their largest sample.
bool memory_has_peak(Connection& c);

// The events index is built when the run finishes (one sorted build costs
// far less than updating a B-tree per event while recording). Until then,
// and in a crashed run, range queries scan; they are correct, only slower.
void create_deferred_indexes(Connection& c);
bool has_deferred_indexes(Connection& c);

// Checks that the file is a Pipewright run this build can read; throws
// DbError with the reason (not SQLite, damaged, not a run, newer major).
// Returns "major.minor" of the file.
std::string check_schema(Connection& c);

// Bounds a reader trusts a run database within (docs/database.md,
// "Failure behaviour"): stage numbers and counts, and event/sample times.
constexpr std::int64_t kMaxStages = 65536;
constexpr std::int64_t kMaxReplica = 32767;  // Event::replica is an int16
constexpr std::int64_t kMaxAbsTimeNs = std::int64_t(1) << 60;  // ~36 years: differences never overflow

// What the reader checks before it allocates or iterates anything from a
// file, so a hostile or damaged run is refused (DbRefused naming the table,
// column and value) instead of exhausting memory or hanging:
// - the schema holds only tables and indexes (no views, triggers or virtual
//   tables: a recursive view would never finish), and every table this
//   version reads is a plain table;
// - run.stages in [0, kMaxStages];
// - events and memory samples: stages in [0, kMaxStages), times within
//   +-kMaxAbsTimeNs, end_ns >= start_ns; replicas (events 1.2, memory 1.3)
//   in [0, kMaxReplica].
void check_contents(Connection& c);
// The first part of that, which check_schema runs before it reads meta.
void check_schema_objects(Connection& c);

// A recording a command is about to add to, checked by SQLite's own
// integrity_check (every page, every index against its table; it stops at
// the first fault): damage is refused (DamagedRecording) before anything is
// written into the file, not buried under new rows. It reads the whole
// file once: 0.45 s for a 39 MB recording on the 2-core test machine.
void check_integrity(Connection& c);

// Cheap checks before SQLite sees the file, for clearer messages: missing,
// empty, not SQLite, shorter than its header says.
void check_file(const std::string& path);

}  // namespace pw::db

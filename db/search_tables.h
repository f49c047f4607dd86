#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pw::db {

class Connection;

// One subnet a search scored (table search_subnets, docs/database.md).
struct SearchSubnet {
  std::int64_t id = 0;     // unique in the file: what `export-subnet --subnet ID` names
  int order = 0;           // evaluation order within its search, from 0
  std::vector<int> choices;
  double accuracy = 0;     // on the job's held-out split
  std::int64_t parameters = 0;  // parameter elements of the standalone subnet
  double latency_ms = 0;   // core's predicted forward latency (core/nas/subnet_cost.h)
  bool pareto = false;     // on the accuracy / latency front of its search
};

// One search over a trained supernet (table searches).
struct SearchRecord {
  std::int64_t id = 0;     // filled in by store_search / the reader
  std::string method;      // "evolution" | "random" (the same-budget baseline)
  std::int64_t created_unix_ns = 0;
  int validation_samples = 0;
  std::string device;      // cluster.device of the job the latency is predicted for
  int microbatch = 0;      // samples per predicted forward
  std::vector<SearchSubnet> subnets;  // in evaluation order
};

// Schema 1.1: the two search tables (IF NOT EXISTS). create_schema makes
// them in new files; store_search adds them to a 1.0 file.
void create_search_tables(Connection& c);

// Checks that `path` is a recording store_search may add to: a run this
// build reads, whole by SQLite's integrity check (schema.h). Throws
// DamagedRecording or DbRefused naming the file. store_search runs it
// itself; a command runs it first too, to refuse before it spends minutes
// on the search.
void check_before_adding(const std::string& path);

// Appends a search (and its subnets) to the recorded run database `path`,
// in one transaction; adds the tables to an older 1.x file and raises its
// meta.schema_minor. Returns the search id. Throws DbRefused for a file
// that is not a run this build reads or is damaged (check_before_adding),
// DbError for a failed write.
std::int64_t store_search(const std::string& path, const SearchRecord& search);

}  // namespace pw::db

// The run-database reader as replay/export/compare drive it: the input is
// written to a file and opened; a refusal (db::DbError, exit 2 in the CLI)
// is the only allowed outcome for a bad file; an accepted file is read
// the way `replay` and `export` read it. A crash, hang, huge allocation or
// sanitizer report is a finding. Seeds: small recorded runs (scripts/fuzz
// can add `pipewright simulate --db` outputs of resources/jobs).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "db/run_reader.h"
#include "db/sqlite_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/pw_fuzz_run_db_" + std::to_string(::getpid()) + ".sqlite";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    pw::db::RunReader r(path);
    std::uint64_t n = 0;
    r.for_each_event([&](const pw::Event&) { ++n; });
    r.for_each_memory([&](const pw::MemorySample&) { ++n; });
    (void)r.stage_stats();
    (void)r.job();
    (void)r.summary();
    (void)r.plans();
    (void)r.throughput();
    (void)r.migrations();
    (void)r.subnets();
    (void)r.subnet_states();
    (void)r.subnet_edges();
    (void)r.logs();
    (void)r.events(0, 0, 1000000);
  } catch (const pw::db::DbError&) {
  }
  return 0;
}

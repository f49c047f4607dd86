#include "db/search_tables.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "db/run_reader.h"
#include "db/schema.h"
#include "db/sqlite_util.h"

namespace pw::db {

void create_search_tables(Connection& c) {
  c.exec(R"SQL(
CREATE TABLE IF NOT EXISTS searches(id INTEGER PRIMARY KEY, method TEXT NOT NULL, created_unix_ns INTEGER NOT NULL,
  validation_samples INTEGER NOT NULL, device TEXT NOT NULL, microbatch INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS search_subnets(id INTEGER PRIMARY KEY, search INTEGER NOT NULL, ord INTEGER NOT NULL,
  choices_json TEXT NOT NULL, accuracy REAL NOT NULL, parameters INTEGER NOT NULL, latency_ms REAL NOT NULL,
  pareto INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS search_subnets_by_search ON search_subnets(search, ord);
)SQL");
}

namespace {
std::unique_ptr<Connection> open_to_add(const std::string& path) {
  check_file(path);
  auto c = std::make_unique<Connection>(path, Connection::Mode::ReadWrite);
  c->holds_recording();
  c->exec("PRAGMA trusted_schema=OFF;");
  check_schema(*c);
  check_contents(*c);
  check_integrity(*c);
  return c;
}
}  // namespace

void check_before_adding(const std::string& path) { open_to_add(path); }

std::int64_t store_search(const std::string& path, const SearchRecord& s) {
  auto conn = open_to_add(path);
  Connection& c = *conn;
  Transaction t(c);
  create_search_tables(c);
  // Adding tables is what a minor version means: older readers ignore them.
  // The file becomes 1.1 (the search tables' version), not the current
  // minor: a 1.0 file still lacks what 1.2 added (events.replica).
  constexpr int kSearchTablesMinor = 1;
  Statement minor(c, "UPDATE meta SET value = ? WHERE key = 'schema_minor' AND CAST(value AS INTEGER) < ?");
  minor.bind(1, std::string_view(std::to_string(kSearchTablesMinor))).bind(2, static_cast<std::int64_t>(kSearchTablesMinor)).run();
  std::int64_t now = s.created_unix_ns > 0 ? s.created_unix_ns
                                           : std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::system_clock::now().time_since_epoch())
                                                 .count();
  Statement ins(c, "INSERT INTO searches(method, created_unix_ns, validation_samples, device, microbatch) VALUES (?, ?, ?, ?, ?)");
  ins.bind(1, std::string_view(s.method)).bind(2, now).bind(3, static_cast<std::int64_t>(s.validation_samples));
  ins.bind(4, std::string_view(s.device)).bind(5, static_cast<std::int64_t>(s.microbatch)).run();
  std::int64_t id = 0;
  {
    Statement last(c, "SELECT last_insert_rowid()");
    last.step();
    id = last.int64(0);
    last.reset();
  }
  Statement sub(c, "INSERT INTO search_subnets(search, ord, choices_json, accuracy, parameters, latency_ms, pareto) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < s.subnets.size(); ++i) {
    const auto& x = s.subnets[i];
    sub.bind(1, id).bind(2, static_cast<std::int64_t>(i)).bind(3, std::string_view(nlohmann::json(x.choices).dump()));
    sub.bind(4, x.accuracy).bind(5, x.parameters).bind(6, x.latency_ms).bind(7, static_cast<std::int64_t>(x.pareto));
    sub.run();
  }
  t.commit();
  return id;
}

std::vector<SearchRecord> RunReader::searches() const {
  std::vector<SearchRecord> out;
  {
    // A 1.0 file has no search tables: no searches.
    Statement has(*c_, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('searches', 'search_subnets')");
    bool both = has.step() && has.int64(0) == 2;
    has.reset();
    if (!both) return out;
  }
  Statement s(*c_, "SELECT id, method, created_unix_ns, validation_samples, device, microbatch FROM searches ORDER BY id");
  while (s.step()) {
    SearchRecord r;
    r.id = s.int64(0);
    r.method = s.text(1);
    r.created_unix_ns = s.int64(2);
    r.validation_samples = static_cast<int>(s.int64(3));
    r.device = s.text(4);
    r.microbatch = static_cast<int>(s.int64(5));
    out.push_back(std::move(r));
  }
  Statement q(*c_, "SELECT id, ord, choices_json, accuracy, parameters, latency_ms, pareto FROM search_subnets "
                   "WHERE search = ? ORDER BY ord");
  for (auto& r : out) {
    q.bind(1, r.id);
    while (q.step()) {
      SearchSubnet x;
      x.id = q.int64(0);
      x.order = static_cast<int>(q.int64(1));
      // A damaged or foreign row is refused by name, not read as garbage.
      auto refuse = [&](const std::string& why) {
        throw DbRefused(path_ + ": search_subnets row " + std::to_string(x.id) + ": " + why);
      };
      nlohmann::json c = nlohmann::json::parse(q.text(2), nullptr, false);
      if (!c.is_array() || c.size() > 65536) refuse("choices_json is not a list of choice indices");
      for (const auto& v : c) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > (1 << 21))
          refuse("choices_json is not a list of choice indices");
        x.choices.push_back(v.get<int>());
      }
      x.accuracy = q.real(3);
      x.parameters = q.int64(4);
      x.latency_ms = q.real(5);
      x.pareto = q.int64(6) != 0;
      if (!std::isfinite(x.accuracy) || !std::isfinite(x.latency_ms)) refuse("accuracy or latency_ms is not finite");
      r.subnets.push_back(std::move(x));
    }
  }
  return out;
}

}  // namespace pw::db

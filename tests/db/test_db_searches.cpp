// Search results in the run database (issue 23, schema 1.1): a stored
// search reads back field for field; a 1.0 file (no search tables) still
// opens and gets the tables when a search is stored into it.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "db/run_reader.h"
#include "db/run_writer.h"
#include "db/search_tables.h"
#include "db/sqlite_util.h"
#include "db_test_util.h"

using namespace pw;

namespace {
void make_run(const std::string& path) {
  db::RunWriter w(path, {"", "fmnist-supernet", "run", 2});
  w.job(nlohmann::json{{"name", "fmnist-supernet"}});
  w.finish(RunStatus::Finished);
}

db::SearchRecord sample(const std::string& method, double base) {
  db::SearchRecord s;
  s.method = method;
  s.validation_samples = 300;
  s.device = "custom";
  s.microbatch = 32;
  for (int i = 0; i < 5; ++i) {
    db::SearchSubnet x;
    x.choices = {i, 6 - i, 0, 6};
    x.accuracy = base + 0.01 * i;
    x.parameters = 1000 + 17 * i;
    x.latency_ms = 0.5 + 0.25 * i;
    x.pareto = i % 2 == 0;
    s.subnets.push_back(x);
  }
  return s;
}
}  // namespace

TEST(RunDbSearch, StoredSearchesReadBack) {
  test::TempDir d;
  auto path = d.file("run.sqlite");
  make_run(path);
  {
    db::RunReader r(path);
    EXPECT_TRUE(r.searches().empty());
  }
  auto a = sample("evolution", 0.7), b = sample("random", 0.6);
  auto ida = db::store_search(path, a), idb = db::store_search(path, b);
  EXPECT_NE(ida, idb);
  db::RunReader r(path);
  EXPECT_EQ(r.run().schema_version, "1.4");  // a new file is the current version; a search keeps it
  auto got = r.searches();
  ASSERT_EQ(got.size(), 2u);
  std::set<std::int64_t> ids;
  for (int k = 0; k < 2; ++k) {
    const auto& want = k == 0 ? a : b;
    const auto& g = got[k];
    EXPECT_EQ(g.id, k == 0 ? ida : idb);
    EXPECT_EQ(g.method, want.method);
    EXPECT_EQ(g.validation_samples, 300);
    EXPECT_EQ(g.device, "custom");
    EXPECT_EQ(g.microbatch, 32);
    EXPECT_GT(g.created_unix_ns, 0);
    ASSERT_EQ(g.subnets.size(), want.subnets.size());
    for (size_t i = 0; i < g.subnets.size(); ++i) {
      EXPECT_EQ(g.subnets[i].order, static_cast<int>(i));
      EXPECT_EQ(g.subnets[i].choices, want.subnets[i].choices);
      EXPECT_EQ(g.subnets[i].accuracy, want.subnets[i].accuracy);
      EXPECT_EQ(g.subnets[i].parameters, want.subnets[i].parameters);
      EXPECT_EQ(g.subnets[i].latency_ms, want.subnets[i].latency_ms);
      EXPECT_EQ(g.subnets[i].pareto, want.subnets[i].pareto);
      ids.insert(g.subnets[i].id);
    }
  }
  EXPECT_EQ(ids.size(), 10u) << "subnet ids are unique in the file";
}

TEST(RunDbSearch, OlderFileWithoutSearchTablesOpensAndTakesASearch) {
  test::TempDir d;
  auto path = d.file("old.sqlite");
  make_run(path);
  {
    // What a 1.0 writer left: no search tables, schema_minor 0.
    db::Connection c(path, db::Connection::Mode::ReadWrite);
    c.exec("DROP TABLE search_subnets; DROP TABLE searches; UPDATE meta SET value = '0' WHERE key = 'schema_minor';");
  }
  {
    db::RunReader r(path);
    EXPECT_EQ(r.run().schema_version, "1.0");
    EXPECT_TRUE(r.searches().empty());
  }
  db::store_search(path, sample("evolution", 0.7));
  db::RunReader r(path);
  EXPECT_EQ(r.run().schema_version, "1.1");
  ASSERT_EQ(r.searches().size(), 1u);
  EXPECT_EQ(r.searches()[0].subnets.size(), 5u);
}

TEST(RunDbSearch, DamagedChoicesAreRefusedByName) {
  test::TempDir d;
  auto path = d.file("run.sqlite");
  make_run(path);
  db::store_search(path, sample("evolution", 0.7));
  {
    db::Connection c(path, db::Connection::Mode::ReadWrite);
    c.exec("UPDATE search_subnets SET choices_json = '{\"a\": 1}' WHERE ord = 2;");
  }
  db::RunReader r(path);
  try {
    r.searches();
    FAIL() << "damaged choices_json read";
  } catch (const db::DbRefused& e) {
    EXPECT_NE(std::string(e.what()).find("search_subnets row"), std::string::npos) << e.what();
  }
}

TEST(RunDbSearch, StoringIntoANonRunFileIsRefused) {
  test::TempDir d;
  auto path = d.file("empty.sqlite");
  { std::ofstream(path) << "not sqlite at all, just text that is long enough to be read as a header......................"; }
  EXPECT_THROW(db::store_search(path, sample("evolution", 0.7)), db::DbRefused);
}

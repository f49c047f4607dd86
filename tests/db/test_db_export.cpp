#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "db/run_writer.h"
#include "db_test_util.h"

namespace pw {
namespace {

// `pipewright export` draws migrations and subnet dependency edges as flow
// arrows between stage tracks, next to every event.
TEST(RunDbExport, ChromeTraceHasEventsAndFlows) {
  test::TempDir d;
  auto path = d.file("run.sqlite");
  {
    db::RunWriter w(path, {"", "flows", "run", 3});
    for (int i = 0; i < 300; ++i) w.on_event(test::synthetic_event(i, 3));
    w.migration({1000, 5000, 7, 0, 2, 1 << 20, 2});
    w.migration({2000, 6000, 8, 1, 2, 1 << 20, 2});
    w.subnet_edge({3000, 9000, 5, 4, 1, 3});
    w.on_memory(1, 10, 1 << 30);
    w.finish(RunStatus::Finished);
  }
  std::string out = d.file("trace.json");
  std::string cmd = std::string(PW_CLI) + " export " + path + " --chrome-trace " + out + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto j = nlohmann::json::parse(std::ifstream(out));
  int x = 0, s = 0, f = 0, c = 0;
  for (const auto& e : j["traceEvents"]) {
    auto ph = e["ph"].get<std::string>();
    x += ph == "X" && e.value("cat", "") != "idle_cause";  // the attribution's track
    s += ph == "s";
    f += ph == "f";
    c += ph == "C";
  }
  EXPECT_EQ(x, 300);
  EXPECT_EQ(s, 3);
  EXPECT_EQ(f, 3);
  EXPECT_EQ(c, 1);
  bool migrate_arrow = false;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "f" && e["name"] == "migrate layer 7") migrate_arrow = e["tid"] == 2 * 3 && e["ts"] == 5.0;
  EXPECT_TRUE(migrate_arrow) << "migration of layer 7 ends on stage 2's compute track at 5 us";
}

}  // namespace
}  // namespace pw

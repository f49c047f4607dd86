#include <gtest/gtest.h>

#include <QSignalSpy>

#include "core/spec/job_spec.h"
#include "gui/models/run_model.h"
#include "gui/models/simulated_run_source.h"

namespace pw::gui {
namespace {

JobSpec small_job(int stages = 4, int microbatches = 8) {
  return parse_job(nlohmann::json::parse(R"({"name": "u", "model": {"kind": "uniform", "layers": 16, "fwd_ms": 1,
      "bwd_ms": 2, "activation_mb": 10, "param_mb": 5, "output_mb": 1},
      "training": {"batch_size": )" + std::to_string(microbatches) + R"(, "microbatch_size": 1},
      "cluster": {"devices": )" + std::to_string(stages) + R"(, "device": "v100-32g"},
      "pipeline": {"stages": )" + std::to_string(stages) + "}}"));
}

TEST(RunModel, SplitsEventsIntoStageRows) {
  RunModel m;
  QSignalSpy spy(&m, &RunModel::changed);
  RunBatch b = simulate_run(small_job(), {.iterations = 2});
  m.append(b);
  EXPECT_EQ(spy.count(), 1);
  ASSERT_EQ(m.stageCount(), 4);
  EXPECT_EQ(m.eventCount(), b.events.size());
  std::size_t total = 0;
  for (int s = 0; s < 4; ++s)
    for (int r = 0; r < kTrackRowCount; ++r) {
      const auto& t = m.track(s, static_cast<TrackRow>(r));
      total += t.size();
      for (std::size_t i = 0; i < t.size(); ++i) ASSERT_EQ(static_cast<int>(row_of(t.kind(i))), r);
    }
  EXPECT_EQ(total, b.events.size());
  // 1F1B with a flush: each iteration has 8 forward + 8 backward per stage
  // and its optimizer step (of no time here: the model has no optimizer_ms).
  EXPECT_EQ(m.track(0, TrackRow::Compute).size(), 2u * (16 + 1));
  EXPECT_EQ(m.completions().size(), 16u);
  EXPECT_EQ(m.plans().size(), 1u);
  EXPECT_NE(m.planAt(m.endNs()), nullptr);
}

TEST(RunModel, DerivedThroughputMatchesSamplesOverTime) {
  RunModel m;
  RunBatch b = simulate_run(small_job(), {.iterations = 20});
  m.append(b);
  auto tp = m.throughput(10);
  ASSERT_FALSE(tp.empty());
  // Independent: samples completed over the whole span of completions.
  const auto& c = m.completions();
  double expect = c.size() / ((c.back() - m.beginNs()) / 1e9);
  double mean = 0;
  for (const auto& s : tp) mean += s.samples_per_s;
  mean /= tp.size();
  EXPECT_NEAR(mean, expect, expect * 0.02);
}

TEST(RunModel, MemoryAtIsLastSampleAtOrBefore) {
  RunModel m;
  RunBatch b;
  for (int i = 0; i < 5; ++i) b.memory.push_back({.t_ns = i * 10, .stage = 1, .bytes = 100 + i});
  m.append(b);
  EXPECT_EQ(m.memoryAt(1, -1), 0);
  EXPECT_EQ(m.memoryAt(1, 0), 100);
  EXPECT_EQ(m.memoryAt(1, 25), 102);
  EXPECT_EQ(m.memoryAt(1, 1000), 104);
  EXPECT_EQ(m.peakMemory(1), 104);
}

TEST(RunModel, MemoryCategoriesAddUpToTotal) {
  RunModel m;
  m.append(simulate_run(small_job(), {.iterations = 1}));
  for (int s = 0; s < m.stageCount(); ++s) {
    ASSERT_FALSE(m.memory(s).empty());
    for (const auto& x : m.memory(s)) {
      std::int64_t sum = 0;
      for (auto c : memory_categories(x)) sum += c;
      ASSERT_EQ(sum, x.bytes);
    }
  }
}

TEST(RunModel, ClearEmitsReset) {
  RunModel m;
  m.append(simulate_run(small_job(), {.iterations = 1}));
  QSignalSpy spy(&m, &RunModel::reset);
  m.clear();
  EXPECT_EQ(spy.count(), 1);
  EXPECT_TRUE(m.isEmpty());
  EXPECT_EQ(m.stageCount(), 0);
}

}  // namespace
}  // namespace pw::gui

#include <sstream>

#include "gui/models/run_export.h"

namespace pw::gui {
namespace {

TEST(RunExport, CsvHasOneLinePerEventAndChromeTraceIsJson) {
  RunModel m;
  m.append(simulate_run(small_job(), {.iterations = 2}));
  std::ostringstream csv;
  export_events_csv(m, csv);
  std::string s = csv.str();
  EXPECT_EQ(static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')), m.eventCount() + 1);
  std::ostringstream trace;
  export_chrome_trace(m, trace);
  auto j = nlohmann::json::parse(trace.str(), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  std::size_t complete = 0;
  for (const auto& e : (j.is_array() ? j : j["traceEvents"]))
    if (e.value("ph", "") == "X") ++complete;
  EXPECT_EQ(complete, m.eventCount());
}

}  // namespace
}  // namespace pw::gui

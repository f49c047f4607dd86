#include <gtest/gtest.h>

#include <QAbstractItemModelTester>

#include "gui/models/job_model.h"
#include "gui/models/migrations_model.h"
#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_model.h"

namespace pw::gui {
namespace {

TEST(MigrationsModel, PassesModelTesterWhileRowsArrive) {
  RunModel run;
  MigrationsModel m(&run);
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_EQ(m.rowCount(), 0);
  for (int i = 0; i < 3; ++i) {
    RunBatch b;
    b.migrations.push_back({.start_ns = 1000 * i, .end_ns = 1000 * i + 500, .layer = 10 + i, .from_stage = i,
                            .to_stage = i + 1, .bytes = 1 << 20, .plan_version = 2});
    run.append(b);
    EXPECT_EQ(m.rowCount(), i + 1);
  }
  EXPECT_EQ(m.data(m.index(1, MigrationsModel::Move)).toString(), QStringLiteral("1 → 2"));
  EXPECT_EQ(m.data(m.index(1, MigrationsModel::Layer)).toInt(), 11);
  EXPECT_EQ(m.data(m.index(2, MigrationsModel::Bytes)).toString(), QStringLiteral("1.00 MiB"));
  m.setCursor(1200);
  EXPECT_TRUE(m.flags(m.index(1, 0)) & Qt::ItemIsEnabled);
  EXPECT_FALSE(m.flags(m.index(2, 0)) & Qt::ItemIsEnabled);
  run.clear();
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(PlannerComparisonModel, PassesModelTesterAndShowsEveryPlanner) {
  PlannerComparisonModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  JobModel job;
  Prediction p = predict(*job.spec());
  m.setPrediction(p);
  ASSERT_EQ(m.rowCount(), static_cast<int>(p.outcomes.size()));
  EXPECT_TRUE(m.data(m.index(0, 0)).toString().startsWith("uniform"));
  double tp = m.data(m.index(0, PlannerComparisonModel::Throughput), Qt::UserRole).toDouble();
  EXPECT_DOUBLE_EQ(tp, p.outcomes[0].iteration.result.throughput_samples_per_s);
  std::string expect;
  for (const auto& st : p.outcomes[0].iteration.plan.plan.stages)
    expect += (expect.empty() ? "" : " | ") + std::to_string(st.first_layer) + "-" + std::to_string(st.last_layer);
  EXPECT_EQ(m.data(m.index(0, PlannerComparisonModel::Partition)).toString().toStdString(), expect);
  EXPECT_EQ(p.outcomes[0].iteration.plan.plan.stages.size(), 4u);
}

}  // namespace
}  // namespace pw::gui

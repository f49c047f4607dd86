// The Search view's model (issue 23), without widgets: rows, the front
// (checked against the definition here), its plot order, the comparison
// run's front, nearest-point selection and the export command; with the
// db layer, searches stored by db::store_search load into it.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QTemporaryDir>

#include "gui/models/search_model.h"
#ifdef PW_STUDIO_HAVE_DB
#include "db/run_writer.h"
#include "db/search_tables.h"
#include "gui/sources/db_search_loader.h"
#endif

namespace pw::gui {
namespace {
SearchRun hand_made() {
  SearchRun r;
  r.db_path = QStringLiteral("/runs/a.sqlite");
  //           id  choices      acc   ms   params
  r.points = {{10, {0, 1}, 0.80, 5.0, 900},   // front
              {11, {1, 1}, 0.70, 2.0, 500},   // front
              {12, {2, 0}, 0.75, 6.0, 950},   // dominated by 10
              {13, {3, 3}, 0.90, 9.0, 2000},  // front
              {14, {1, 2}, 0.70, 3.0, 520}};  // dominated by 11
  return r;
}
}  // namespace

TEST(SearchModel, RowsFrontAndPlotOrder) {
  SearchModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.setRun(hand_made());
  ASSERT_EQ(m.rowCount(), 5);
  EXPECT_EQ(m.columnCount(), SearchModel::ColumnCount);
  EXPECT_EQ(m.data(m.index(0, SearchModel::Id)).toLongLong(), 10);
  EXPECT_EQ(m.data(m.index(0, SearchModel::Subnet)).toString(), QStringLiteral("[0,1]"));
  EXPECT_EQ(m.data(m.index(3, SearchModel::Accuracy)).toString(), QStringLiteral("0.9000"));
  EXPECT_DOUBLE_EQ(m.data(m.index(3, SearchModel::Latency), Qt::UserRole).toDouble(), 9.0);
  // The front by the definition: nothing at least as good on both axes and better on one.
  const auto& pts = m.run().points;
  for (int i = 0; i < m.rowCount(); ++i) {
    bool dominated = false;
    for (const auto& q : pts)
      dominated |= q.accuracy >= pts[i].accuracy && q.latency_ms <= pts[i].latency_ms &&
                   (q.accuracy > pts[i].accuracy || q.latency_ms < pts[i].latency_ms);
    EXPECT_EQ(m.onFront(i), !dominated) << "row " << i;
    EXPECT_EQ(m.data(m.index(i, SearchModel::Front)).toString().isEmpty(), dominated);
  }
  auto line = m.frontLine();
  ASSERT_EQ(line.size(), 3u);
  EXPECT_EQ(line[0], QPointF(2.0, 0.70));
  EXPECT_EQ(line[1], QPointF(5.0, 0.80));
  EXPECT_EQ(line[2], QPointF(9.0, 0.90));
  EXPECT_TRUE(m.comparisonFrontLine().empty());
}

TEST(SearchModel, SelectionAndExportCommand) {
  SearchModel m;
  m.setRun(hand_made());
  EXPECT_EQ(m.nearestRow(9.1, 0.89), 3);
  EXPECT_EQ(m.nearestRow(2.9, 0.70), 4);
  EXPECT_EQ(m.exportCommand(3), QStringLiteral("pipewright export-subnet /runs/a.sqlite --subnet 13 -o subnet-13.pt"));
  EXPECT_TRUE(m.describe(3).contains(QStringLiteral("on the Pareto front")));
  EXPECT_FALSE(m.describe(2).contains(QStringLiteral("on the Pareto front")));
  EXPECT_TRUE(m.exportCommand(5).isEmpty());
  m.clear();
  EXPECT_EQ(m.nearestRow(1, 1), -1);
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(SearchModel, ComparisonRunHasItsOwnFront) {
  SearchModel m;
  m.setRun(hand_made());
  SearchRun b;
  b.points = {{1, {0}, 0.85, 4.0, 1}, {2, {1}, 0.60, 1.0, 1}, {3, {2}, 0.50, 4.0, 1}};
  int changed = 0;
  QObject::connect(&m, &SearchModel::comparisonChanged, [&] { ++changed; });
  m.setComparison(b);
  EXPECT_EQ(changed, 1);
  auto line = m.comparisonFrontLine();
  ASSERT_EQ(line.size(), 2u);
  EXPECT_EQ(line[0], QPointF(1.0, 0.60));
  EXPECT_EQ(line[1], QPointF(4.0, 0.85));
  EXPECT_EQ(m.frontLine().size(), 3u) << "the first run's front is unchanged";
}

#ifdef PW_STUDIO_HAVE_DB
TEST(SearchModel, LoadsStoredSearches) {
  QTemporaryDir dir;
  const std::string path = dir.filePath(QStringLiteral("run.sqlite")).toStdString();
  {
    db::RunWriter w(path, {"", "fmnist-supernet", "run", 2});
    w.finish(RunStatus::Finished);
  }
  EXPECT_TRUE(load_searches(QString::fromStdString(path)).empty());
  db::SearchRecord s;
  s.method = "evolution";
  s.subnets = {{0, 0, {1, 2}, 0.8, 100, 1.5, true}, {0, 0, {2, 2}, 0.7, 90, 1.7, false}};
  auto id = db::store_search(path, s);
  auto runs = load_searches(QString::fromStdString(path));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].label, QStringLiteral("fmnist-supernet: search %1 (evolution)").arg(id));
  ASSERT_EQ(runs[0].points.size(), 2u);
  EXPECT_EQ(runs[0].points[1].choices, (std::vector<int>{2, 2}));
  EXPECT_EQ(runs[0].points[1].latency_ms, 1.7);
  SearchModel m;
  m.setRun(runs[0]);
  EXPECT_TRUE(m.onFront(0));
  EXPECT_FALSE(m.onFront(1));
  EXPECT_TRUE(m.exportCommand(0).startsWith(QStringLiteral("pipewright export-subnet ") + QString::fromStdString(path)));
}
#endif

}  // namespace pw::gui

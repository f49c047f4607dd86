// The studio's Search tab on the offscreen platform (issue 23): a run
// database with two stored searches opens on its evolutionary search; the
// plot holds the subnets, the front and, after a click on a point, the
// selection, whose export command names that subnet; a second run's front
// adds a graph. Saves screenshots.
#include <QComboBox>
#include <QLineEdit>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "db/run_writer.h"
#include "db/search_tables.h"
#include "gui/models/search_model.h"
#include "gui/widgets/search_view.h"
#include "tests/gui/view_test_util.h"

using namespace pw;
using namespace pw::gui;

namespace {
std::string make_db(const QTemporaryDir& dir, const char* name, double shift) {
  std::string path = dir.filePath(QString::fromLatin1(name)).toStdString();
  {
    db::RunWriter w(path, {"", name, "run", 2});
    w.finish(RunStatus::Finished);
  }
  for (const char* method : {"evolution", "random"}) {
    db::SearchRecord s;
    s.method = method;
    for (int i = 0; i < 12; ++i) {
      double lat = 1 + i * 0.5 + shift;
      double acc = 0.5 + 0.3 * std::sqrt(i / 12.0) - (i % 3) * 0.05 - shift * 0.02;
      s.subnets.push_back({0, 0, {i % 7, (i + 3) % 7}, acc, 1000 + i, lat, false});
    }
    db::store_search(path, s);
  }
  return path;
}
}  // namespace

class SearchViewTest : public QObject {
  Q_OBJECT
 private slots:
  void opensSelectsAndCompares() {
    QTemporaryDir dir;
    auto a = QString::fromStdString(make_db(dir, "a.sqlite", 0));
    auto b = QString::fromStdString(make_db(dir, "b.sqlite", 0.4));
    SearchView v;
    v.resize(900, 700);
    v.show();
    QSignalSpy loaded(&v, &SearchView::loaded);
    // Read on a worker thread: the answer comes as a signal.
    auto open = [&](auto member, const QString& path) {
      (v.*member)(path);
      if (!loaded.wait(10000)) return -1;
      return loaded.takeFirst().at(0).toBool() ? 1 : 0;
    };
    QCOMPARE(open(&SearchView::openDatabase, a), 1);
    auto* picker = v.findChild<QComboBox*>();
    QVERIFY(picker);
    QCOMPARE(picker->count(), 2);
    QVERIFY(picker->currentText().endsWith(QStringLiteral("(evolution)")));
    QCOMPARE(v.model()->rowCount(), 12);
    QCOMPARE(v.plot()->graphCount(), 2);  // subnets, front
    // A click on the plot selects the nearest subnet.
    const auto& p = v.model()->run().points[5];
    QPoint at(static_cast<int>(v.plot()->xAxis->coordToPixel(p.latency_ms)),
              static_cast<int>(v.plot()->yAxis->coordToPixel(p.accuracy)));
    QTest::mouseClick(v.plot(), Qt::LeftButton, {}, at);
    QCOMPARE(v.selectedRow(), 5);
    QVERIFY2(v.exportCommand().contains(QStringLiteral("--subnet %1 ").arg(p.id)), qPrintable(v.exportCommand()));
    QCOMPARE(v.plot()->graphCount(), 3);  // + the selection
    QCOMPARE(open(&SearchView::openComparison, b), 1);
    QCOMPARE(v.plot()->graphCount(), 4);  // + the second run's front
    test::screenshot(&v, QStringLiteral("search-view"));
    QCOMPARE(open(&SearchView::openDatabase, dir.filePath(QStringLiteral("missing.sqlite"))), 0);
    QCOMPARE(v.model()->rowCount(), 0);
  }
};

QTEST_MAIN(SearchViewTest)
#include "test_search_view.moc"

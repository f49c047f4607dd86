#pragma once
// Helpers shared by the studio's QtTest programs.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QSet>
#include <QtTest>
#include <functional>
#include <qcustomplot.h>

namespace pw::gui::test {

// Spins the event loop (the GUI stays live) until done() or ms elapse.
inline bool wait_until(const std::function<bool()>& done, int ms = 10000) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) QTest::qWait(10);
  return done();
}

inline QString shot_dir() {
  QString d = qEnvironmentVariable("PW_SCREENSHOT_DIR", QDir::tempPath() + "/pw-screenshots");
  QDir().mkpath(d);
  return d;
}

// Saves a screenshot and checks it is a real picture: non-empty and not a
// single flat colour.
inline void screenshot(QWidget* w, const QString& name) {
  QApplication::processEvents();
  for (auto* p : w->findChildren<QCustomPlot*>()) p->replot(QCustomPlot::rpImmediateRefresh);
  QPixmap px = w->grab();
  QVERIFY2(!px.isNull() && px.width() > 50 && px.height() > 50, qPrintable(name));
  QImage img = px.toImage();
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); y += 7)
    for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
  QVERIFY2(colours.size() > 8, qPrintable(name + ": the picture is (nearly) one colour"));
  const QString file = shot_dir() + "/" + name + ".png";
  QVERIFY(px.save(file));
  QVERIFY(QFileInfo(file).size() > 1000);
}

}  // namespace pw::gui::test

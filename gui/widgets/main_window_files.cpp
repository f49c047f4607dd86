// Files: opening runs and jobs (menu, recent files, drag and drop), saving
// jobs, exporting plots, traces and CSV.
#include "gui/widgets/main_window.h"
#include "gui/widgets/search_view.h"

#include <QApplication>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <qcustomplot.h>

#include "gui/models/explain_model.h"
#include "gui/models/job_model.h"
#include "gui/models/run_export.h"
#include "gui/models/run_model.h"
#include "gui/models/run_source.h"
#include "gui/models/saved_file.h"
#include "gui/widgets/compare_widget.h"
#include "gui/widgets/plot_export.h"
#include "gui/widgets/timeline_view.h"
#ifdef PW_STUDIO_HAVE_DB
#include "db/run_reader.h"
#include "gui/sources/db_run_source.h"
#endif

namespace pw::gui {
namespace {
constexpr int kMaxRecent = 10;
bool is_run_file(const QString& f) {
  const QString ext = QFileInfo(f).suffix().toLower();
  return ext == "db" || ext == "sqlite" || ext == "pwrun" || ext == "sqlite3";
}
}  // namespace

bool MainWindow::openFile(const QString& file) {
  if (!QFileInfo::exists(file)) {
    QMessageBox::warning(this, tr("Open"), tr("\"%1\" does not exist.").arg(file));
    return false;
  }
  if (QFileInfo(file).suffix().toLower() == "json") {
    QString err;
    if (!job_->load(file, &err)) {
      QMessageBox::warning(this, tr("Open Job"), err);
      return false;
    }
    addRecent(file);
    showTab(QStringLiteral("designer"));
    return true;
  }
#ifdef PW_STUDIO_HAVE_DB
  openRecording(file);
  search_->openDatabase(file);  // a searched supernet run: its Search tab is ready too
  addRecent(file);
  return true;
#else
  QMessageBox::warning(this, tr("Open Run"), tr("This studio was built without the run database (pw_db)."));
  return false;
#endif
}

bool MainWindow::openRecording(const QString& file, int replica) {
#ifdef PW_STUDIO_HAVE_DB
  setSource(new DbRunSource(file.toStdString(), 0, nullptr, replica));
  explain_model_->setJobLoader([path = file.toStdString()] { return db::RunReader(path).job(); },
                               tr("the run recorded no job"));
  explain_model_->setPredictionLoader([path = file.toStdString()] { return recorded_prediction(path); });
  return true;
#else
  (void)file;
  (void)replica;
  return false;
#endif
}

void MainWindow::onOpen() {
  QSettings s;
  QString file = QFileDialog::getOpenFileName(this, tr("Open Run"), s.value("files/lastDir").toString(),
                                              tr("Runs and jobs (*.db *.sqlite *.pwrun *.json);;All files (*)"));
  if (file.isEmpty()) return;
  s.setValue("files/lastDir", QFileInfo(file).absolutePath());
  openFile(file);
}

void MainWindow::onOpenJob() {
  QSettings s;
  QString file = QFileDialog::getOpenFileName(this, tr("Open Job"), s.value("files/lastDir").toString(), tr("Job specs (*.json)"));
  if (file.isEmpty()) return;
  s.setValue("files/lastDir", QFileInfo(file).absolutePath());
  openFile(file);
}

void MainWindow::onSaveJob(bool as) {
  QString file = job_->fileName();
  if (as || file.isEmpty()) {
    file = QFileDialog::getSaveFileName(this, tr("Save Job"), file.isEmpty() ? QString::fromStdString(job_->document().value("name", "job")) + ".json" : file,
                                        tr("Job specs (*.json)"));
    if (file.isEmpty()) return;
  }
  QString err;
  if (!job_->save(file, &err)) {
    QMessageBox::warning(this, tr("Save Job"), err);
    return;
  }
  addRecent(file);
  statusBar()->showMessage(tr("Saved %1").arg(file), 4000);
}

void MainWindow::onExportPlot() {
  // The plot under focus, or the timeline.
  QCustomPlot* plot = nullptr;
  for (QWidget* w = QApplication::focusWidget(); w && !plot; w = w->parentWidget()) plot = qobject_cast<QCustomPlot*>(w);
  if (!plot) plot = tabs_->currentWidget() == compare_ ? nullptr : timeline_->plot();
  QWidget* other = nullptr;
  if (!plot && tabs_->currentWidget() == compare_) other = compare_;
  QString file = QFileDialog::getSaveFileName(this, tr("Export Plot"), QStringLiteral("plot.png"),
                                              tr("PNG image (*.png);;PDF document (*.pdf);;SVG drawing (*.svg)"));
  if (file.isEmpty()) return;
  QString err = plot ? export_plot(plot, file) : export_widget(other, file);
  if (!err.isEmpty()) QMessageBox::warning(this, tr("Export"), err);
  else statusBar()->showMessage(tr("Exported %1").arg(file), 4000);
}

void MainWindow::onExportTrace(bool csv) {
  QString file = QFileDialog::getSaveFileName(this, csv ? tr("Export Events CSV") : tr("Export Chrome Trace"),
                                              csv ? QStringLiteral("events.csv") : QStringLiteral("trace.json"),
                                              csv ? tr("CSV (*.csv)") : tr("Chrome trace (*.json)"));
  if (file.isEmpty()) return;
  QString err = save_confirmed_file(file, [&](std::ostream& out) {
    csv ? export_events_csv(*run_, out) : export_chrome_trace(*run_, out);
  });
  if (!err.isEmpty()) {
    QMessageBox::warning(this, tr("Export"), err);
    return;
  }
  statusBar()->showMessage(tr("Exported %1").arg(file), 4000);
}

void MainWindow::addRecent(const QString& file) {
  QSettings s;
  QStringList list = s.value("files/recent").toStringList();
  QString abs = QFileInfo(file).absoluteFilePath();
  list.removeAll(abs);
  list.prepend(abs);
  while (list.size() > kMaxRecent) list.removeLast();
  s.setValue("files/recent", list);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList list = QSettings().value("files/recent").toStringList();
  for (int i = 0; i < list.size(); ++i) {
    auto* a = recent_menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(list[i]).fileName()));
    a->setToolTip(list[i]);
    const QString f = list[i];
    connect(a, &QAction::triggered, this, [this, f] { openFile(f); });
  }
  recent_menu_->setEnabled(!list.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile() && (is_run_file(u.toLocalFile()) || QFileInfo(u.toLocalFile()).suffix().toLower() == "json")) {
      e->acceptProposedAction();
      return;
    }
}

void MainWindow::dropEvent(QDropEvent* e) {
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) {
      openFile(u.toLocalFile());
      break;
    }
}

}  // namespace pw::gui

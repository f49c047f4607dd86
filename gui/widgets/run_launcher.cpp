#include "gui/widgets/run_launcher.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QStandardPaths>
#include <fstream>

#include "gui/models/job_model.h"
#ifdef PW_STUDIO_HAVE_DB
#include "gui/sources/db_run_source.h"
#endif
#ifdef PW_STUDIO_HAVE_IPC
#include "gui/sources/live_run_source.h"
#endif

namespace pw::gui {

QString find_pipewright() {
  const QString dir = QCoreApplication::applicationDirPath();
  for (const QString& c : {dir + "/pipewright", dir + "/../engine/cli/pipewright", dir + "/../../engine/cli/pipewright"})
    if (QFileInfo(c).isExecutable()) return QFileInfo(c).canonicalFilePath();
  QString onPath = QStandardPaths::findExecutable(QStringLiteral("pipewright"));
  return onPath.isEmpty() ? QStringLiteral("pipewright") : onPath;
}

bool LaunchDialog::ask(QWidget* parent, const JobModel& job, LaunchRequest& out) {
  const QString name = QString::fromStdString(job.document().value("name", std::string("job")));
  const QString base = QStandardPaths::writableLocation(QStandardPaths::TempLocation) + "/pipewright-studio";
  QDir().mkpath(base);
  const QString stamp = QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss"));
  out.job_file = job.fileName().isEmpty() || job.isModified() ? base + "/" + name + "-" + stamp + ".json" : job.fileName();
  out.run_dir = base + "/runs/" + name + "-" + stamp;

  QDialog d(parent);
  d.setWindowTitle(QObject::tr("Launch pipewright run"));
  auto* form = new QFormLayout(&d);
  auto* program = new QLineEdit(find_pipewright());
  auto* args = new QLineEdit(QStringLiteral("run %1 --run-dir %2").arg(out.job_file, out.run_dir));
  args->setMinimumWidth(520);
  form->addRow(QObject::tr("Program"), program);
  form->addRow(QObject::tr("Arguments"), args);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  form->addRow(buttons);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  if (d.exec() != QDialog::Accepted) return false;

  if (out.job_file != job.fileName()) {
    std::ofstream f(out.job_file.toStdString());
    f << job.document().dump(2) << "\n";
    if (!f) {
      QMessageBox::warning(parent, QObject::tr("Launch"), QObject::tr("cannot write \"%1\"").arg(out.job_file));
      return false;
    }
  }
  out.program = program->text();
  out.arguments = QProcess::splitCommand(args->text());
  int i = out.arguments.indexOf(QStringLiteral("--run-dir"));
  if (i >= 0 && i + 1 < out.arguments.size()) out.run_dir = out.arguments[i + 1];
  return true;
}

RunSource* make_launch_source(const LaunchRequest& req) {
#ifdef PW_STUDIO_HAVE_DB
  // The engine creates the file once its workers are up: allow it 60 s.
  return new DbRunSource((req.run_dir + "/run.db").toStdString(), 60000);
#else
  (void)req;
  return nullptr;
#endif
}

RunSource* make_attach_source(const QString& target) {
#ifdef PW_STUDIO_HAVE_DB
  if (QFileInfo(target).isFile()) return new DbRunSource(target.toStdString());
  if (QFileInfo(target).isDir()) return new DbRunSource((target + "/run.db").toStdString(), 60000);
#endif
#ifdef PW_STUDIO_HAVE_IPC
  return new LiveRunSource(target.toStdString());
#else
  (void)target;
  return nullptr;
#endif
}

}  // namespace pw::gui

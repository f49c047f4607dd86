#include "gui/widgets/run_launcher.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QStandardPaths>
#include <exception>

#include "core/io/checked_write.h"
#include "gui/models/engine_process.h"
#include "gui/models/job_model.h"
#ifdef PW_STUDIO_HAVE_DB
#include "gui/sources/db_run_source.h"
#endif
#ifdef PW_STUDIO_HAVE_IPC
#include "gui/sources/live_run_source.h"
#include "ipc/curve.h"
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
  auto* args = new QLineEdit(EngineProcess::runArguments(out.job_file, out.run_dir, out.run_dir + "/run.db").join(' '));
  args->setMinimumWidth(520);
  form->addRow(QObject::tr("Program"), program);
  form->addRow(QObject::tr("Arguments"), args);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  form->addRow(buttons);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  if (d.exec() != QDialog::Accepted) return false;

  if (out.job_file != job.fileName()) {
    try {  // the studio's own file (a stamped name in its temporary folder)
      write_file_atomically(out.job_file.toStdString(), job.document().dump(2) + "\n", "job");
    } catch (const std::exception& e) {
      QMessageBox::warning(parent, QObject::tr("Launch"), QString::fromStdString(e.what()));
      return false;
    }
  }
  out.program = program->text();
  out.arguments = QProcess::splitCommand(args->text());
  int i = out.arguments.indexOf(QStringLiteral("--run-dir"));
  if (i >= 0 && i + 1 < out.arguments.size()) out.run_dir = out.arguments[i + 1];
  return true;
}

AttachDialog::AttachDialog(QWidget* parent)
    : QDialog(parent), target_(new QLineEdit(this)), server_key_(new QLineEdit(this)), client_key_(new QLineEdit(this)) {
  setWindowTitle(tr("Attach to a run"));
  setObjectName(QStringLiteral("attachDialog"));
  auto* form = new QFormLayout(this);
  target_->setObjectName(QStringLiteral("attachTarget"));
  server_key_->setObjectName(QStringLiteral("attachServerKey"));
  client_key_->setObjectName(QStringLiteral("attachClientKey"));
  target_->setMinimumWidth(420);
  target_->setPlaceholderText(tr("tcp://host:port, or a run database"));
  server_key_->setPlaceholderText(tr("server.pub (only for a coordinator beyond loopback)"));
  client_key_->setPlaceholderText(tr("client.key, written by `pipewright keys`"));
  auto file_row = [this, form](const QString& label, QLineEdit* edit, const QString& filter) {
    auto* row = new QHBoxLayout;
    auto* browse = new QPushButton(tr("Browse…"), this);
    row->addWidget(edit, 1);
    row->addWidget(browse);
    form->addRow(label, row);
    connect(browse, &QPushButton::clicked, this, [this, edit, filter] {
      QString f = QFileDialog::getOpenFileName(this, tr("Key file"), edit->text(), filter);
      if (!f.isEmpty()) edit->setText(f);
    });
  };
  form->addRow(tr("Endpoint or file"), target_);
  file_row(tr("Server public key"), server_key_, tr("Public keys (*.pub *.key);;All files (*)"));
  file_row(tr("Client key"), client_key_, tr("Secret keys (*.key);;All files (*)"));
  auto* note = new QLabel(tr("Key files are needed only when the coordinator listens beyond loopback (CURVE)."), this);
  note->setWordWrap(true);
  form->addRow(note);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  QSettings st;
  setRequest({st.value("attach/last", "tcp://127.0.0.1:5555").toString(), st.value("attach/server_key").toString(),
              st.value("attach/client_key").toString()});
}

AttachRequest AttachDialog::request() const {
  return {target_->text().trimmed(), server_key_->text().trimmed(), client_key_->text().trimmed()};
}

void AttachDialog::setRequest(const AttachRequest& r) {
  target_->setText(r.target);
  server_key_->setText(r.server_public_key);
  client_key_->setText(r.client_key);
}

void AttachDialog::remember() const {
  QSettings st;
  AttachRequest r = request();
  st.setValue("attach/last", r.target);
  st.setValue("attach/server_key", r.server_public_key);
  st.setValue("attach/client_key", r.client_key);
}

RunSource* make_attach_source(const AttachRequest& r, QString* error) {
  const bool keys = !r.server_public_key.isEmpty() || !r.client_key.isEmpty();
  if (!keys) {
    RunSource* s = make_attach_source(r.target);
    if (!s && error) *error = QObject::tr("this studio was built without live telemetry (pw_ipc)");
    return s;
  }
#ifdef PW_STUDIO_HAVE_IPC
  if (r.server_public_key.isEmpty() || r.client_key.isEmpty()) {
    if (error) *error = QObject::tr("CURVE needs both the server's public key file and this client's key file");
    return nullptr;
  }
  try {
    ipc::CurveClient c = ipc::curve_client_from_files(r.server_public_key.toStdString(), r.client_key.toStdString());
    return new LiveRunSource(r.target.toStdString(), c);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return nullptr;
  }
#else
  if (error) *error = QObject::tr("this studio was built without live telemetry (pw_ipc)");
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

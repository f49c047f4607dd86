#pragma once
#include <QDialog>
#include <QString>
#include <QStringList>

class QLineEdit;
class QWidget;

namespace pw::gui {

class JobModel;
class RunSource;

// How to start `pipewright run` for the designer's job.
struct LaunchRequest {
  QString program;      // the pipewright executable
  QStringList arguments;
  QString job_file;     // the job as saved for the engine
  QString run_dir;      // --run-dir: the engine records run.db there (--db)
};

// Finds the pipewright executable: beside the studio (installed), in the
// build tree (engine/cli), then on PATH.
QString find_pipewright();

class LaunchDialog {
 public:
  // Saves the job to a file the engine can read and asks for the program
  // and arguments. False when cancelled or the job could not be written.
  static bool ask(QWidget* parent, const JobModel& job, LaunchRequest& out);
};

// What to attach to: a coordinator's telemetry endpoint (tcp://...) or a
// run database; for a coordinator listening beyond loopback, the key files
// `pipewright keys` wrote: the server's public key (server.pub) and this
// client's key pair (client.key, mode 0600).
struct AttachRequest {
  QString target;
  QString server_public_key;  // empty: no CURVE
  QString client_key;
};

// Endpoint and key files, remembered between sessions (QSettings).
class AttachDialog : public QDialog {
  Q_OBJECT
 public:
  explicit AttachDialog(QWidget* parent = nullptr);
  AttachRequest request() const;
  void setRequest(const AttachRequest& r);
  void remember() const;

 private:
  QLineEdit *target_, *server_key_, *client_key_;
};

// nullptr with *error set when the key files cannot be used (unreadable,
// readable by others, not keys) or the build lacks the reader needed.
RunSource* make_attach_source(const AttachRequest& request, QString* error);
// Attach by endpoint (tcp://...) with pw_ipc, or by a run database path.
RunSource* make_attach_source(const QString& endpoint_or_file);

}  // namespace pw::gui

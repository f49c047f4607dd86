#pragma once
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTimer>

namespace pw::gui {

// A `pipewright run` started by the studio as a child process. The engine
// prints `telemetry ENDPOINT` on stderr once its publisher is bound (with
// --listen tcp://127.0.0.1:0 the port is chosen then), which is where the
// studio's live source connects. Everything here is signal-driven on the
// GUI thread: nothing waits for the child.
class EngineProcess : public QObject {
  Q_OBJECT
 public:
  // After a stop request: SIGTERM at once (the coordinator stops its
  // workers), SIGKILL if it has not exited after this long.
  static constexpr int kKillAfterMs = 3000;

  explicit EngineProcess(QObject* parent = nullptr);
  ~EngineProcess() override;  // an engine still running is killed with the studio

  // The arguments for `pipewright run JOB` recorded into `db_path` (empty:
  // none) and published on a loopback port the engine picks.
  static QStringList runArguments(const QString& job_file, const QString& run_dir, const QString& db_path);

  // False (and failed() is not emitted) while a previous engine still runs.
  bool start(const QString& program, const QStringList& arguments);
  // Terminates the engine (SIGTERM, then SIGKILL after kKillAfterMs).
  void stop();
  // SIGKILL now (tests; a wedged engine).
  void kill();

  bool isRunning() const { return process_.state() != QProcess::NotRunning; }
  qint64 pid() const { return process_.processId(); }
  QString endpoint() const { return endpoint_; }
  // The engine's last "error: ..." line, if it printed one.
  QString lastError() const { return last_error_; }

 signals:
  void output(const QString& line);        // every line the engine prints
  void telemetry(const QString& endpoint);  // where its telemetry is published
  // The engine is gone: exit code 0 = it finished its run. `why` is a
  // sentence for the user (exit code or signal, and its error line).
  void exited(int code, bool crashed, const QString& why);

 private:
  void readLines(QProcess::ProcessChannel channel);

  QProcess process_;
  QTimer kill_timer_;
  QByteArray partial_[2];
  QString endpoint_, last_error_;
  bool stop_requested_ = false;
};

}  // namespace pw::gui

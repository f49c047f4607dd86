#include "gui/models/engine_process.h"

#include <QRegularExpression>

namespace pw::gui {

EngineProcess::EngineProcess(QObject* parent) : QObject(parent) {
  kill_timer_.setSingleShot(true);
  kill_timer_.setInterval(kKillAfterMs);
  connect(&kill_timer_, &QTimer::timeout, this, [this] { process_.kill(); });
  connect(&process_, &QProcess::readyReadStandardOutput, this, [this] { readLines(QProcess::StandardOutput); });
  connect(&process_, &QProcess::readyReadStandardError, this, [this] { readLines(QProcess::StandardError); });
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    last_error_ = tr("cannot start %1: %2").arg(process_.program(), process_.errorString());
    emit output(last_error_);
    emit exited(-1, true, last_error_);
  });
  connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
    kill_timer_.stop();
    readLines(QProcess::StandardOutput);
    readLines(QProcess::StandardError);
    const bool crashed = status == QProcess::CrashExit;
    QString why = crashed ? (stop_requested_ ? tr("the engine was stopped") : tr("the engine died (killed or crashed)"))
                          : code == 0 ? tr("the engine finished") : tr("the engine exited with code %1").arg(code);
    if (!last_error_.isEmpty() && code != 0) why += QStringLiteral(": ") + last_error_;
    emit exited(code, crashed, why);
  });
}

EngineProcess::~EngineProcess() {
  if (!isRunning()) return;
  process_.disconnect(this);
  process_.kill();
  process_.waitForFinished(1000);
}

QStringList EngineProcess::runArguments(const QString& job_file, const QString& run_dir, const QString& db_path) {
  QStringList a{QStringLiteral("run"), job_file};
  if (!run_dir.isEmpty()) a << QStringLiteral("--run-dir") << run_dir;
  if (!db_path.isEmpty()) a << QStringLiteral("--db") << db_path;
  // Port 0: the engine binds a free loopback port and prints it.
  a << QStringLiteral("--listen") << QStringLiteral("tcp://127.0.0.1:0");
  return a;
}

bool EngineProcess::start(const QString& program, const QStringList& arguments) {
  if (isRunning()) return false;
  endpoint_.clear();
  last_error_.clear();
  partial_[0].clear();
  partial_[1].clear();
  stop_requested_ = false;
  process_.start(program, arguments);
  return true;
}

void EngineProcess::stop() {
  if (!isRunning()) return;
  stop_requested_ = true;
  process_.terminate();
  kill_timer_.start();
}

void EngineProcess::kill() {
  if (isRunning()) process_.kill();
}

void EngineProcess::readLines(QProcess::ProcessChannel channel) {
  process_.setReadChannel(channel);
  QByteArray& buf = partial_[channel == QProcess::StandardError];
  // A progress line rewritten in place (\r) is a line of its own here.
  buf += process_.readAll().replace('\r', '\n');
  static const QRegularExpression kTelemetry(QStringLiteral("^telemetry\\s+(\\S+)"));
  qsizetype nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    QString line = QString::fromUtf8(buf.left(nl)).trimmed();
    buf.remove(0, nl + 1);
    if (line.isEmpty()) continue;
    emit output(line);
    if (line.startsWith(QLatin1String("error:"))) last_error_ = line.mid(6).trimmed();
    if (auto m = kTelemetry.match(line); m.hasMatch() && endpoint_.isEmpty()) {
      endpoint_ = m.captured(1);
      emit telemetry(endpoint_);
    }
  }
}

}  // namespace pw::gui

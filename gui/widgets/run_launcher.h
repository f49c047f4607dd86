#pragma once
#include <QString>
#include <QStringList>

class QWidget;

namespace pw::gui {

class JobModel;
class RunSource;

// How to start `pipewright run` for the designer's job.
struct LaunchRequest {
  QString program;      // the pipewright executable
  QStringList arguments;
  QString job_file;     // the job as saved for the engine
  QString run_dir;      // --run-dir: the engine records run.db there
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

// The source that follows a launched engine: its run database, tailed as
// it is written (live telemetry when the build has pw_ipc and the run
// publishes it). nullptr when the build has no reader at all.
RunSource* make_launch_source(const LaunchRequest& req);
// Attach by endpoint (tcp://...) with pw_ipc, or by a run database path.
RunSource* make_attach_source(const QString& endpoint_or_file);

}  // namespace pw::gui

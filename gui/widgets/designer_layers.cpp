// The job designer's Layers tab for TorchScript models: what the model's
// top-level children are and what they cost, read by `pipewright profile`
// in a child process (libtorch never loads in the studio).
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QTabWidget>

#include "core/io/checked_write.h"
#include "core/model/profile_io.h"
#include "gui/models/job_model.h"
#include "gui/models/layer_table_model.h"
#include "gui/widgets/designer_widget.h"
#include "gui/widgets/run_launcher.h"

namespace pw::gui {

QString DesignerWidget::modelPath() const {
  QString p = job_->value(QStringLiteral("model.path")).toString();
  if (p.isEmpty() || QFileInfo(p).isAbsolute()) return p;
  const QString base = job_->fileName().isEmpty() ? QDir::currentPath() : QFileInfo(job_->fileName()).absolutePath();
  return QDir(base).absoluteFilePath(p);
}

bool DesignerWidget::inspectionPending() const { return measuring(); }

void DesignerWidget::showLayersTab() { right_tabs_->setCurrentIndex(1); }

void DesignerWidget::inspectModel() {
  const bool ts = job_->value(QStringLiteral("model.kind")).toString() == QLatin1String("torchscript");
  measure_->setVisible(ts);
  measure_->setEnabled(ts && !measuring() && inspect_error_.isEmpty() && !inspected_path_.isEmpty());
  if (!ts) {
    if (!inspected_path_.isEmpty()) {
      // Left the TorchScript kind: its layers and messages go; the
      // prediction fills the table with the new kind's profile.
      layers_->setRows({}, QString());
      layer_source_->setText(tr("The layers appear with the prediction."));
    }
    inspected_path_.clear();
    inspect_error_.clear();
    return;
  }
  const QString path = modelPath();
  if (path == inspected_path_ || measuring()) return;  // a running one re-checks when done
  inspected_path_ = path;
  inspect_error_.clear();
  layers_->setRows({}, QString());
  if (path.isEmpty()) {
    layer_source_->setText(tr("Pick a TorchScript file to see its layers."));
    return;
  }
  layer_source_->setText(tr("Reading %1…").arg(QFileInfo(path).fileName()));
  runProfiler(false);
}

bool DesignerWidget::measureLayers() {
  if (!job_->isValid() || job_->spec()->model.kind != "torchscript" || measuring() || inspected_path_.isEmpty() ||
      !inspect_error_.isEmpty())
    return false;
  return runProfiler(true);
}

bool DesignerWidget::runProfiler(bool measure) {
  // `pipewright profile` in a child process: libtorch loads and times the
  // model there, never inside the studio (an in-process libtorch corrupted
  // the studio's heap now and then), and the GUI thread only hears when it
  // is done. Reading the layers is the same call with one timed run.
  nlohmann::json doc = job_->document();
  doc["model"]["path"] = inspected_path_.toStdString();
  doc["model"].erase("profile");
  const QString dir = QDir::temp().filePath(QStringLiteral("pipewright-studio"));
  QDir().mkpath(dir);
  const QString stem = dir + "/" + QFileInfo(inspected_path_).completeBaseName() + "-" + QString::number(QCoreApplication::applicationPid());
  const QString job_file = stem + ".job.json";
  try {
    write_file_atomically(job_file.toStdString(), doc.dump(2), "job");  // the studio's own temporary job
  } catch (const std::exception&) {
    return false;
  }
  if (!profiler_) {
    profiler_ = new QProcess(this);
    profiler_->setProcessChannelMode(QProcess::MergedChannels);
    connect(profiler_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus st) {
      ModelInspection r;
      const bool measured = profiler_->property("measure").toBool();
      const QString out = profiler_->property("out").toString();
      if (st != QProcess::NormalExit || code != 0) {
        QString text = QString::fromUtf8(profiler_->readAll()).trimmed();
        r.error = tr("pipewright profile failed: %1").arg(text.isEmpty() ? tr("exit code %1").arg(code) : text.section('\n', -1));
      } else {
        try {
          r.profile = load_profile_file(out.toStdString(), 0);
          r.rows = LayerTableModel::rowsFromProfile(r.profile, 4);  // TorchScript weights are fp32
        } catch (const std::exception& e) {
          r.error = QString::fromUtf8(e.what());
        }
      }
      inspect_measuring_ = measured;
      applyInspection(r);
    }, Qt::QueuedConnection);  // after QProcess is done with itself: applyInspection may start it again
    connect(profiler_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
      if (e != QProcess::FailedToStart) return;
      inspect_measuring_ = profiler_->property("measure").toBool();
      applyInspection({{}, {}, tr("cannot start %1: %2").arg(profiler_->program(), profiler_->errorString())});
    }, Qt::QueuedConnection);
  }
  profiler_->setProperty("out", stem + ".profile.json");
  profiler_->setProperty("measure", measure);
  measure_->setEnabled(false);
  if (measure) layer_source_->setText(tr("Measuring every layer on this machine (pipewright profile)…"));
  // --overwrite: the profile file is the studio's own, written again by each inspection.
  profiler_->start(find_pipewright(), {QStringLiteral("profile"), job_file, QStringLiteral("-o"), stem + ".profile.json",
                                        QStringLiteral("--overwrite"), QStringLiteral("--repeats"),
                                        measure ? QStringLiteral("10") : QStringLiteral("1")});
  return true;
}

bool DesignerWidget::measuring() const { return profiler_ && profiler_->state() != QProcess::NotRunning; }

void DesignerWidget::applyInspection(const ModelInspection& r) {
  const bool measured = inspect_measuring_;
  inspect_measuring_ = false;
  measure_->setEnabled(true);
  if (job_->value(QStringLiteral("model.kind")).toString() != QLatin1String("torchscript")) {
    inspectModel();  // the kind changed while `pipewright profile` ran: its result is moot
    return;
  }
  if (!r.error.isEmpty()) {
    if (measured) {
      layer_source_->setText(QStringLiteral("<span style='color:#d9534f'>%1</span>").arg(r.error.toHtmlEscaped()));
    } else {
      inspect_error_ = r.error;
      layer_source_->setText(tr("Cannot use this model: see the TorchScript file field."));
    }
  } else if (measured) {
    layers_->applyProfile(r.profile, QStringLiteral("measured"));
    // Beside the model, so `pipewright run` can take it too; the temp
    // folder where that is not writable.
    QString out = inspected_path_ + QStringLiteral(".profile.json");
    if (!QFileInfo(QFileInfo(out).absolutePath()).isWritable())
      out = QDir::temp().filePath(QFileInfo(inspected_path_).fileName() + QStringLiteral(".profile.json"));
    try {
      save_profile_file(r.profile, out.toStdString());
      layer_source_->setText(tr("Measured on this machine; saved to %1").arg(out));
      job_->setValue(QStringLiteral("model.profile"), out);
    } catch (const std::exception& e) {
      layer_source_->setText(tr("Measured (not saved: %1)").arg(QString::fromUtf8(e.what())));
    }
  } else {
    layers_->setRows(r.rows, QStringLiteral("torchscript"));
    layer_source_->setText(tr("%n layer(s) from %1, timed once: Measure costs for steady figures the planner uses.", nullptr,
                              static_cast<int>(r.rows.size()))
                               .arg(QFileInfo(inspected_path_).fileName()));
  }
  showValidation();
  // The path may have changed while this ran.
  const QString now = modelPath();
  if (job_->value(QStringLiteral("model.kind")).toString() == QLatin1String("torchscript") && now != inspected_path_) {
    inspected_path_.clear();
    inspect_error_.clear();
  }
  inspectModel();
}

}  // namespace pw::gui

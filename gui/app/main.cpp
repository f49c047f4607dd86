// pipewright-studio: design, launch, monitor, replay and compare runs.
#include <QApplication>
#include <QCommandLineParser>
#include <QSettings>
#include <QTimer>

#include "gui/widgets/main_window.h"
#include "gui/widgets/theme.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Pipewright"));
  QApplication::setApplicationName(QStringLiteral("Pipewright Studio"));
  QApplication::setApplicationVersion(QStringLiteral(PW_VERSION));
  QApplication::setDesktopFileName(QStringLiteral("pipewright-studio"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/pipewright.svg")));

  QCommandLineParser cli;
  cli.setApplicationDescription(QStringLiteral("Pipewright Studio: pipeline training runs, live and recorded"));
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument(QStringLiteral("file"), QStringLiteral("A run database to replay or a job file to design"));
  QCommandLineOption simulate(QStringLiteral("simulate"), QStringLiteral("Open the job and show its simulated run"));
  QCommandLineOption theme(QStringLiteral("theme"), QStringLiteral("light or dark"), QStringLiteral("theme"));
  QCommandLineOption compare(QStringLiteral("compare"), QStringLiteral("A second run (database or job) to compare the first with"),
                             QStringLiteral("file"));
  cli.addOptions({simulate, theme, compare});
  cli.process(app);

  QSettings settings;
  QString t = cli.isSet(theme) ? cli.value(theme) : settings.value("view/theme", "light").toString();
  pw::gui::apply_theme(t == "dark" ? pw::gui::Theme::Dark : pw::gui::Theme::Light);

  pw::gui::MainWindow w;
  w.resize(1400, 900);
  w.show();
  const QStringList files = cli.positionalArguments();
  if (!files.isEmpty()) {
    QTimer::singleShot(0, &w, [&w, files, sim = cli.isSet(simulate), other = cli.value(compare)] {
      if (w.openFile(files.first()) && sim) w.simulateJob();
      if (!other.isEmpty()) w.compareWithFile(other);
    });
  }
  return app.exec();
}

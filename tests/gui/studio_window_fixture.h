#pragma once
// The studio's main window as the QtTest programs open it: fresh settings
// under a test application name (no user's saved layout leaks in), the
// light theme, a fixed size, shown.
#include <QCoreApplication>
#include <QSettings>

#include "gui/widgets/main_window.h"
#include "gui/widgets/theme.h"

namespace pw::gui::test {

inline MainWindow* open_studio_window(const char* application_name) {
  QCoreApplication::setOrganizationName("PipewrightTest");
  QCoreApplication::setApplicationName(application_name);
  QSettings().clear();
  apply_theme(Theme::Light);
  auto* win = new MainWindow;
  win->resize(1400, 900);
  win->show();
  return win;
}

}  // namespace pw::gui::test

#pragma once
#include <QColor>
#include <QString>

#include "core/events/event.h"
#include "core/plan/plan.h"

class QCustomPlot;

namespace pw::gui {

enum class Theme { Light, Dark };

// Registers the studio's icons (resources/studio.qrc); MainWindow calls it.
void init_resources();

// Application-wide palette (Fusion style), persisted in QSettings.
void apply_theme(Theme t);
Theme current_theme();
// Axis, grid and background colours of a plot follow the palette.
void style_plot(QCustomPlot* plot);

// One colour per event kind, the same in every view and in the legend.
QColor kind_color(EventKind k);
QColor policy_color(MemoryPolicy p);
QColor stage_color(int stage);  // distinct series colours
QColor memory_category_color(int category);

}  // namespace pw::gui

#pragma once
#include <QString>

class QCustomPlot;
class QWidget;

namespace pw::gui {

// Writes a plot as PNG, PDF or SVG, chosen by the file's extension (PNG
// at the screen's device pixel ratio, so HiDPI exports stay sharp).
// Returns an empty string or the reason it failed.
QString export_plot(QCustomPlot* plot, const QString& file);
// Any other view (plan, graph): PNG or SVG of what is on screen.
QString export_widget(QWidget* widget, const QString& file);

}  // namespace pw::gui

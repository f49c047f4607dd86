#pragma once

class QWidget;

namespace pw::gui {

// Greys a view whose content is out of date: a translucent sheet of the
// window colour over it (a child that follows its size), and the view
// disabled. Not a QGraphicsOpacityEffect: Qt skips painting a parent's
// background behind opaque grandchildren (a plot, a table's viewport), so
// the fade darkens them to near black instead.
void set_veiled(QWidget* view, bool veiled);
bool is_veiled(const QWidget* view);

}  // namespace pw::gui

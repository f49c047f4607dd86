#include "gui/widgets/stale_veil.h"

#include <QEvent>
#include <QPainter>
#include <QWidget>

namespace pw::gui {
namespace {

class Veil final : public QWidget {
 public:
  explicit Veil(QWidget* view) : QWidget(view) {
    setObjectName(QStringLiteral("staleVeil"));
    view->installEventFilter(this);
    setGeometry(view->rect());
  }

 protected:
  bool eventFilter(QObject* o, QEvent* e) override {
    if (o == parent() && e->type() == QEvent::Resize) setGeometry(parentWidget()->rect());
    return false;
  }
  void paintEvent(QPaintEvent*) override {
    QColor c = palette().color(QPalette::Window);
    c.setAlpha(170);
    QPainter(this).fillRect(rect(), c);
  }
};

Veil* veil_of(const QWidget* view) { return view->findChild<Veil*>(QStringLiteral("staleVeil"), Qt::FindDirectChildrenOnly); }

}  // namespace

void set_veiled(QWidget* view, bool veiled) {
  view->setEnabled(!veiled);
  Veil* v = veil_of(view);
  if (!v && !veiled) return;
  if (!v) v = new Veil(view);
  v->setVisible(veiled);
  if (veiled) v->raise();
}

bool is_veiled(const QWidget* view) {
  const Veil* v = veil_of(view);
  return v && v->isVisibleTo(view);
}

}  // namespace pw::gui

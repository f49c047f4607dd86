#include "gui/widgets/lazy_replot.h"

#include <QEvent>
#include <qcustomplot.h>

namespace pw::gui {
namespace {

// Child of a plot that replots it when it is shown after data changed
// while it was hidden.
class ReplotOnShow final : public QObject {
 public:
  explicit ReplotOnShow(QCustomPlot* plot) : QObject(plot), plot_(plot) {
    setObjectName(QStringLiteral("pw.replotOnShow"));
    plot->installEventFilter(this);
  }
  bool stale = false;

  bool eventFilter(QObject*, QEvent* e) override {
    if (e->type() == QEvent::Show && stale) {
      stale = false;
      plot_->replot(QCustomPlot::rpQueuedReplot);
    }
    return false;
  }

 private:
  QCustomPlot* plot_;
};

}  // namespace

void replot_when_visible(QCustomPlot* plot) {
  if (!plot) return;
  if (plot->isVisible()) {
    plot->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  auto* r = plot->findChild<ReplotOnShow*>(QStringLiteral("pw.replotOnShow"), Qt::FindDirectChildrenOnly);
  if (!r) r = new ReplotOnShow(plot);
  r->stale = true;
}

}  // namespace pw::gui

#include "gui/widgets/plot_export.h"

#include <QFileInfo>
#include <QPainter>
#include <QSvgGenerator>
#include <qcustomplot.h>

namespace pw::gui {

QString export_plot(QCustomPlot* plot, const QString& file) {
  const QString ext = QFileInfo(file).suffix().toLower();
  const int w = plot->width(), h = plot->height();
  bool ok = false;
  if (ext == "png") {
    ok = plot->savePng(file, w, h, plot->devicePixelRatioF());
  } else if (ext == "pdf") {
    ok = plot->savePdf(file, w, h);
  } else if (ext == "svg") {
    QSvgGenerator gen;
    gen.setFileName(file);
    gen.setSize(QSize(w, h));
    gen.setViewBox(QRect(0, 0, w, h));
    gen.setTitle(QStringLiteral("Pipewright Studio plot"));
    QCPPainter painter;
    painter.begin(&gen);
    plot->toPainter(&painter, w, h);
    painter.end();
    ok = QFileInfo(file).size() > 0;
  } else {
    return QStringLiteral("unknown format \"%1\" (use .png, .pdf or .svg)").arg(ext);
  }
  return ok ? QString() : QStringLiteral("could not write \"%1\"").arg(file);
}

QString export_widget(QWidget* widget, const QString& file) {
  const QString ext = QFileInfo(file).suffix().toLower();
  if (ext == "svg") {
    QSvgGenerator gen;
    gen.setFileName(file);
    gen.setSize(widget->size());
    gen.setViewBox(widget->rect());
    QPainter p(&gen);
    widget->render(&p);
    p.end();
    return QFileInfo(file).size() > 0 ? QString() : QStringLiteral("could not write \"%1\"").arg(file);
  }
  if (ext == "png") return widget->grab().save(file) ? QString() : QStringLiteral("could not write \"%1\"").arg(file);
  return QStringLiteral("this view exports as .png or .svg");
}

}  // namespace pw::gui

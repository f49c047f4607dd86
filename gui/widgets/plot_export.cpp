#include "gui/widgets/plot_export.h"

#include <QBuffer>
#include <QFileInfo>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <qcustomplot.h>

#include "gui/models/saved_file.h"

namespace pw::gui {

// Each format is drawn into memory and saved through save_confirmed_file
// (the output rule: temporary file, rename, never over a run database), not
// by Qt's own file writers, which truncate the old file first.
QString export_plot(QCustomPlot* plot, const QString& file) {
  const QString ext = QFileInfo(file).suffix().toLower();
  const int w = plot->width(), h = plot->height();
  QByteArray bytes;
  QBuffer buf(&bytes);
  buf.open(QIODevice::WriteOnly);
  bool ok = false;
  if (ext == "png") {
    ok = plot->toPixmap(w, h, plot->devicePixelRatioF()).save(&buf, "PNG");
  } else if (ext == "pdf") {
    QPdfWriter pdf(&buf);
    pdf.setPageSize(QPageSize(QSizeF(w, h), QPageSize::Point));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setResolution(72);
    pdf.setTitle(QStringLiteral("Pipewright Studio plot"));
    QCPPainter painter;
    ok = painter.begin(&pdf);
    if (ok) {
      plot->toPainter(&painter, w, h);
      painter.end();
    }
  } else if (ext == "svg") {
    QSvgGenerator gen;
    gen.setOutputDevice(&buf);
    gen.setSize(QSize(w, h));
    gen.setViewBox(QRect(0, 0, w, h));
    gen.setTitle(QStringLiteral("Pipewright Studio plot"));
    QCPPainter painter;
    painter.begin(&gen);
    plot->toPainter(&painter, w, h);
    painter.end();
    ok = true;
  } else {
    return QStringLiteral("unknown format \"%1\" (use .png, .pdf or .svg)").arg(ext);
  }
  buf.close();
  if (!ok || bytes.isEmpty()) return QStringLiteral("could not draw the plot for \"%1\"").arg(file);
  return save_confirmed_file(file, bytes);
}

QString export_widget(QWidget* widget, const QString& file) {
  const QString ext = QFileInfo(file).suffix().toLower();
  QByteArray bytes;
  QBuffer buf(&bytes);
  buf.open(QIODevice::WriteOnly);
  if (ext == "svg") {
    QSvgGenerator gen;
    gen.setOutputDevice(&buf);
    gen.setSize(widget->size());
    gen.setViewBox(widget->rect());
    QPainter p(&gen);
    widget->render(&p);
    p.end();
  } else if (ext == "png") {
    if (!widget->grab().save(&buf, "PNG")) return QStringLiteral("could not draw the view for \"%1\"").arg(file);
  } else {
    return QStringLiteral("this view exports as .png or .svg");
  }
  buf.close();
  if (bytes.isEmpty()) return QStringLiteral("could not draw the view for \"%1\"").arg(file);
  return save_confirmed_file(file, bytes);
}

}  // namespace pw::gui

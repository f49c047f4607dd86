#include "gui/widgets/theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyleFactory>
#include <qcustomplot.h>

// Resources of a static library are registered by hand.
static void init_studio_resources() { Q_INIT_RESOURCE(studio); }

namespace pw::gui {
namespace {
Theme g_theme = Theme::Light;
}

void init_resources() {
  static bool done = false;
  if (!done) init_studio_resources();
  done = true;
}

void apply_theme(Theme t) {
  g_theme = t;
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QPalette p;
  if (t == Theme::Dark) {
    const QColor window(37, 41, 48), base(27, 30, 36), text(220, 223, 228), disabled(120, 124, 130);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, QColor(50, 55, 63));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Link, QColor(90, 160, 240));
    p.setColor(QPalette::Highlight, QColor(62, 118, 196));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::PlaceholderText, disabled);
    p.setColor(QPalette::Disabled, QPalette::Text, disabled);
    p.setColor(QPalette::Disabled, QPalette::WindowText, disabled);
    p.setColor(QPalette::Disabled, QPalette::ButtonText, disabled);
  } else {
    p = QApplication::style()->standardPalette();
  }
  QApplication::setPalette(p);
}

Theme current_theme() { return g_theme; }

void style_plot(QCustomPlot* plot) {
  const QPalette pal = QApplication::palette();
  const QColor fg = pal.color(QPalette::WindowText);
  QColor grid = fg;
  grid.setAlpha(40);
  plot->setBackground(pal.color(QPalette::Base));
  for (QCPAxis* a : plot->axisRect()->axes()) {
    a->setBasePen(QPen(fg));
    a->setTickPen(QPen(fg));
    a->setSubTickPen(QPen(fg));
    a->setTickLabelColor(fg);
    a->setLabelColor(fg);
    a->grid()->setPen(QPen(grid, 1, Qt::DotLine));
    a->grid()->setSubGridVisible(false);
  }
  if (plot->legend) {
    plot->legend->setBrush(pal.color(QPalette::Base));
    plot->legend->setTextColor(fg);
    plot->legend->setBorderPen(QPen(grid));
  }
}

QColor kind_color(EventKind k) {
  switch (k) {
    case EventKind::Forward: return {76, 155, 232};
    case EventKind::Backward: return {232, 163, 60};
    case EventKind::Recompute: return {181, 123, 224};
    case EventKind::SwapOut: return {71, 179, 156};
    case EventKind::SwapIn: return {40, 140, 118};
    case EventKind::Send: return {140, 150, 165};
    case EventKind::Recv: return {110, 120, 135};
    case EventKind::OptimizerStep: return {217, 83, 79};
    case EventKind::Migrate: return {224, 195, 65};
    case EventKind::Idle: return {90, 95, 105};
    // B and W apart from each other and from the full backward's orange.
    case EventKind::BackwardInput: return {232, 110, 60};
    case EventKind::BackwardWeight: return {196, 196, 72};
    // The replicas' all-reduce: a colour of its own, away from the links' greys.
    case EventKind::AllReduce: return {170, 92, 52};
    // The tensor group's all-reduces: communication inside the stage's own
    // compute, a dark rose no compute kind uses.
    case EventKind::TensorAllReduce: return {150, 60, 100};
  }
  return Qt::gray;
}

QColor policy_color(MemoryPolicy p) {
  switch (p) {
    case MemoryPolicy::Keep: return {92, 168, 104};
    case MemoryPolicy::Recompute: return {181, 123, 224};
    case MemoryPolicy::Swap: return {71, 179, 156};
    // Kept but for the attention core (recomputed): between keep and recompute.
    case MemoryPolicy::Selective: return {150, 150, 200};
  }
  return Qt::gray;
}

QColor stage_color(int stage) {
  static const QColor c[] = {{76, 155, 232}, {232, 163, 60}, {92, 168, 104}, {217, 83, 79},  {181, 123, 224},
                             {71, 179, 156}, {224, 195, 65}, {200, 110, 160}, {120, 130, 220}, {150, 110, 80}};
  return c[stage % 10];
}

QColor memory_category_color(int c) {
  static const QColor cols[] = {{76, 155, 232}, {120, 130, 220}, {181, 123, 224},
                                {232, 163, 60}, {71, 179, 156},  {224, 195, 65}};
  return cols[c % 6];
}

}  // namespace pw::gui

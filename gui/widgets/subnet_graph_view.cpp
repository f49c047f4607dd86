#include "gui/widgets/subnet_graph_view.h"

#include <QGraphicsEllipseItem>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QWheelEvent>
#include <map>

#include "gui/models/run_model.h"
#include "gui/widgets/graph_layout.h"

namespace pw::gui {
namespace {

QColor phase_color(SubnetPhase p) {
  switch (p) {
    case SubnetPhase::Queued: return {150, 155, 165};
    case SubnetPhase::Forward: return {76, 155, 232};
    case SubnetPhase::Backward: return {232, 163, 60};
    case SubnetPhase::Blocked: return {217, 83, 79};
    case SubnetPhase::Done: return {92, 168, 104};
  }
  return Qt::gray;
}

}  // namespace

SubnetGraphView::SubnetGraphView(QWidget* parent) : QGraphicsView(parent) {
  setObjectName(QStringLiteral("subnetGraph"));
  setScene(new QGraphicsScene(this));
  setRenderHint(QPainter::Antialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);
  throttle_.setSingleShot(true);
  throttle_.setInterval(500);
  connect(&throttle_, &QTimer::timeout, this, &SubnetGraphView::relayout);
}

void SubnetGraphView::setRun(const RunModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  if (run_)
    connect(run_, &RunModel::changed, this, [this] {
      if (!throttle_.isActive()) throttle_.start();
    });
  relayout();
}

void SubnetGraphView::setCursor(qint64 t) {
  cursor_ = t;
  if (!throttle_.isActive()) throttle_.start(50);
}

void SubnetGraphView::wheelEvent(QWheelEvent* e) {
  double f = e->angleDelta().y() > 0 ? 1.15 : 1 / 1.15;
  scale(f, f);
}

void SubnetGraphView::relayout() {
  scene()->clear();
  nodes_ = edges_ = 0;
  if (!run_ || run_->subnetStates().empty()) {
    auto* t = scene()->addSimpleText(tr("No subnet activity in this run (CSP / NAS runs only)."));
    t->setBrush(palette().color(QPalette::WindowText));
    return;
  }
  // Latest phase of each subnet up to the cursor (any stage), and the
  // subnets most recently active.
  struct Info {
    SubnetPhase phase = SubnetPhase::Queued;
    std::int64_t t = INT64_MIN;
    int stage = -1;
  };
  std::map<int, Info> latest;
  for (const auto& s : run_->subnetStates()) {
    if (s.t_ns > cursor_) continue;
    auto& i = latest[s.subnet];
    if (s.t_ns >= i.t) i = {s.phase, s.t_ns, s.stage};
  }
  std::vector<std::pair<std::int64_t, int>> recent;
  for (const auto& [id, i] : latest) recent.push_back({i.t, id});
  std::sort(recent.rbegin(), recent.rend());
  if (static_cast<int>(recent.size()) > max_subnets_) recent.resize(max_subnets_);
  std::map<int, int> index;
  GraphInput in;
  std::sort(recent.begin(), recent.end(), [](auto& a, auto& b) { return a.second < b.second; });
  for (const auto& [t, id] : recent) {
    index[id] = static_cast<int>(in.nodes.size());
    const Info& i = latest[id];
    in.nodes.push_back({QStringLiteral("s%1").arg(id),
                        tr("subnet %1\n%2 @ stage %3").arg(id).arg(QLatin1String(to_string(i.phase))).arg(i.stage)});
  }
  std::vector<bool> open;
  for (const auto& e : run_->subnetEdges()) {
    if (e.t_ns > cursor_ || !index.count(e.waiter) || !index.count(e.waited_for)) continue;
    in.edges.push_back({index[e.waiter], index[e.waited_for], tr("L%1 @ S%2").arg(e.layer).arg(e.stage)});
    open.push_back(e.resolved_ns < 0 || e.resolved_ns > cursor_);
  }
  GraphLayout g = layout_graph(in);
  const QColor fg = palette().color(QPalette::WindowText);
  for (std::size_t k = 0; k < g.edges.size(); ++k) {
    const auto& e = g.edges[k];
    if (e.spline.empty()) continue;
    QPainterPath path(e.spline[0]);
    std::size_t n = e.spline.size();
    bool tip = (n - 1) % 3 != 0;
    std::size_t curve_end = tip ? n - 1 : n;
    for (std::size_t i = 1; i + 2 < curve_end; i += 3) path.cubicTo(e.spline[i], e.spline[i + 1], e.spline[i + 2]);
    QPointF end = tip ? e.spline.back() : e.spline[curve_end - 1];
    if (tip) path.lineTo(end);
    QColor c = open[k] ? QColor(217, 83, 79) : fg;
    auto* item = scene()->addPath(path, QPen(c, open[k] ? 1.8 : 1.0, open[k] ? Qt::SolidLine : Qt::DashLine));
    item->setToolTip(e.label);
    // Arrowhead.
    QPointF from = path.pointAtPercent(0.97);
    QLineF dir(end, from);
    dir.setLength(7);
    QLineF l1 = dir, l2 = dir;
    l1.setAngle(dir.angle() + 25);
    l2.setAngle(dir.angle() - 25);
    QPolygonF head{end, l1.p2(), l2.p2()};
    scene()->addPolygon(head, QPen(c), QBrush(c));
    auto* label = scene()->addSimpleText(e.label);
    label->setBrush(c);
    QFont f = label->font();
    f.setPointSizeF(7.5);
    label->setFont(f);
    QPointF lp = g.ok ? e.label_pos : path.pointAtPercent(0.5);
    label->setPos(lp - QPointF(label->boundingRect().width() / 2, label->boundingRect().height() / 2));
    ++edges_;
  }
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& n = g.nodes[i];
    const int id = recent[i].second;
    QRectF r(n.center.x() - n.width / 2, n.center.y() - n.height / 2, n.width, n.height);
    QColor c = phase_color(latest[id].phase);
    auto* box = scene()->addRect(r, QPen(c.darker(140), 1.5), QBrush(c.lighter(130)));
    box->setToolTip(n.label);
    auto* t = scene()->addSimpleText(n.label);
    QFont f = t->font();
    f.setPointSizeF(7.5);
    t->setFont(f);
    t->setPos(n.center - QPointF(t->boundingRect().width() / 2, t->boundingRect().height() / 2));
    ++nodes_;
  }
  scene()->setSceneRect(scene()->itemsBoundingRect().adjusted(-10, -10, 10, 10));
}

}  // namespace pw::gui

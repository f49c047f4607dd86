#pragma once
#include <QGraphicsView>
#include <QTimer>

namespace pw::gui {

class RunModel;

// NAS runs: the most recent subnets as nodes coloured by state, and the
// waits between them as edges labelled with the shared layer and stage
// (red while unresolved). Laid out by Graphviz dot, drawn in a
// QGraphicsScene; re-laid out at most twice a second while live.
class SubnetGraphView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit SubnetGraphView(QWidget* parent = nullptr);
  void setRun(const RunModel* run);
  void setCursor(qint64 t_ns);
  void setMaxSubnets(int n) { max_subnets_ = n; }
  int nodeCount() const { return nodes_; }
  int edgeCount() const { return edges_; }
  void relayout();

 protected:
  void wheelEvent(QWheelEvent* e) override;

 private:
  const RunModel* run_ = nullptr;
  QTimer throttle_;
  qint64 cursor_ = INT64_MAX;
  int max_subnets_ = 24;
  int nodes_ = 0, edges_ = 0;
};

}  // namespace pw::gui

#pragma once
#include <QPointF>
#include <QRectF>
#include <QString>
#include <vector>

namespace pw::gui {

// A directed graph laid out by Graphviz "dot" (libgvc/libcgraph):
// positions in points, y growing downwards (Qt's convention).
struct GraphLayout {
  struct Node {
    QString id, label;
    QPointF center;
    double width = 0, height = 0;
  };
  struct Edge {
    int from = 0, to = 0;
    QString label;
    std::vector<QPointF> spline;  // cubic Bézier control points (1 + 3k)
    QPointF label_pos;
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  QRectF bounds;
  bool ok = false;
  QString error;
};

struct GraphInput {
  struct Node {
    QString id, label;
  };
  struct Edge {
    int from = 0, to = 0;
    QString label;
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
};

// Runs the layout. Without Graphviz (built without libgvc) returns a
// simple grid with straight edges and ok = false, error set.
GraphLayout layout_graph(const GraphInput& in);

}  // namespace pw::gui

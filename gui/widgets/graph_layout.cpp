#include "gui/widgets/graph_layout.h"

#include <cmath>

#ifdef PW_STUDIO_HAVE_GRAPHVIZ
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#endif

namespace pw::gui {
namespace {

GraphLayout grid_layout(const GraphInput& in) {
  GraphLayout out;
  int cols = std::max(1, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(in.nodes.size())))));
  for (std::size_t i = 0; i < in.nodes.size(); ++i)
    out.nodes.push_back({in.nodes[i].id, in.nodes[i].label,
                         QPointF(60 + 120.0 * (i % cols), 40 + 80.0 * (i / cols)), 72, 36});
  for (const auto& e : in.edges) {
    GraphLayout::Edge x{e.from, e.to, e.label, {out.nodes[e.from].center, out.nodes[e.to].center}, {}};
    x.label_pos = (out.nodes[e.from].center + out.nodes[e.to].center) / 2;
    out.edges.push_back(x);
  }
  out.bounds = QRectF(0, 0, 120.0 * cols + 40, 80.0 * ((in.nodes.size() + cols - 1) / cols) + 40);
  return out;
}

}  // namespace

GraphLayout layout_graph(const GraphInput& in) {
#ifndef PW_STUDIO_HAVE_GRAPHVIZ
  GraphLayout g = grid_layout(in);
  g.error = QStringLiteral("built without Graphviz");
  return g;
#else
  // Graphviz keeps global state: one layout at a time, on the GUI thread.
  GraphLayout out;
  GVC_t* gvc = gvContext();
  Agraph_t* g = agopen(const_cast<char*>("subnets"), Agdirected, nullptr);
  agattr(g, AGRAPH, const_cast<char*>("rankdir"), const_cast<char*>("LR"));
  agattr(g, AGRAPH, const_cast<char*>("nodesep"), const_cast<char*>("0.3"));
  agattr(g, AGNODE, const_cast<char*>("shape"), const_cast<char*>("box"));
  agattr(g, AGNODE, const_cast<char*>("label"), const_cast<char*>(""));
  agattr(g, AGNODE, const_cast<char*>("fontsize"), const_cast<char*>("10"));
  agattr(g, AGEDGE, const_cast<char*>("label"), const_cast<char*>(""));
  agattr(g, AGEDGE, const_cast<char*>("fontsize"), const_cast<char*>("9"));
  std::vector<Agnode_t*> nodes;
  for (const auto& n : in.nodes) {
    QByteArray id = n.id.toUtf8(), label = n.label.toUtf8();
    Agnode_t* an = agnode(g, id.data(), 1);
    agset(an, const_cast<char*>("label"), label.data());
    nodes.push_back(an);
  }
  std::vector<Agedge_t*> edges;
  for (const auto& e : in.edges) {
    Agedge_t* ae = agedge(g, nodes[e.from], nodes[e.to], nullptr, 1);
    QByteArray label = e.label.toUtf8();
    agset(ae, const_cast<char*>("label"), label.data());
    edges.push_back(ae);
  }
  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    gvFreeContext(gvc);
    GraphLayout fallback = grid_layout(in);
    fallback.error = QStringLiteral("Graphviz dot layout failed");
    return fallback;
  }
  const boxf bb = GD_bb(g);
  const double H = bb.UR.y;  // Graphviz y grows upwards
  out.bounds = QRectF(bb.LL.x, 0, bb.UR.x - bb.LL.x, bb.UR.y - bb.LL.y);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const pointf c = ND_coord(nodes[i]);
    out.nodes.push_back({in.nodes[i].id, in.nodes[i].label, QPointF(c.x, H - c.y), ND_width(nodes[i]) * 72,
                         ND_height(nodes[i]) * 72});
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    GraphLayout::Edge e{in.edges[i].from, in.edges[i].to, in.edges[i].label, {}, {}};
    if (ED_spl(edges[i]) && ED_spl(edges[i])->size > 0) {
      const bezier& b = ED_spl(edges[i])->list[0];
      for (int k = 0; k < b.size; ++k) e.spline.push_back(QPointF(b.list[k].x, H - b.list[k].y));
      if (b.eflag) e.spline.push_back(QPointF(b.ep.x, H - b.ep.y));
    }
    if (ED_label(edges[i])) e.label_pos = QPointF(ED_label(edges[i])->pos.x, H - ED_label(edges[i])->pos.y);
    out.edges.push_back(std::move(e));
  }
  out.ok = true;
  gvFreeLayout(gvc, g);
  agclose(g);
  gvFreeContext(gvc);
  return out;
#endif
}

}  // namespace pw::gui

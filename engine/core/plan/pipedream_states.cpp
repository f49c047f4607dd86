#include "core/plan/pipedream_states.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <numeric>
#include <set>

namespace pw {
namespace {

// A set of nodes of one graph.
struct Bits {
  std::vector<std::uint64_t> w;
  explicit Bits(int n = 0) : w((n + 63) / 64, 0) {}
  bool has(int i) const { return (w[i / 64] >> (i % 64)) & 1u; }
  void add(int i) { w[i / 64] |= std::uint64_t{1} << (i % 64); }
  void merge(const Bits& o) {
    for (size_t i = 0; i < w.size(); ++i) w[i] |= o.w[i];
  }
  int count() const {
    int c = 0;
    for (auto x : w) c += __builtin_popcountll(x);
    return c;
  }
};

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

}  // namespace

PipeDreamStates pipedream_states(const PipeDreamGraph& g) {
  const int total = static_cast<int>(g.nodes.size());
  std::vector<std::vector<int>> in(total), out(total);
  for (auto [a, b] : g.edges) {
    out[a].push_back(b);
    in[b].push_back(a);
  }
  // Input sources go, then the sinks left that are unused tuple outputs.
  std::vector<char> keep(total, 1);
  for (int v = 0; v < total; ++v)
    if (in[v].empty() && starts_with(g.nodes[v].desc, "Input")) keep[v] = 0;
  for (int v = 0; v < total; ++v) {
    if (!keep[v] || !starts_with(g.nodes[v].desc, "__getitem__")) continue;
    bool sink = std::none_of(out[v].begin(), out[v].end(), [&](int c) { return keep[c]; });
    if (sink) keep[v] = 0;
  }
  std::vector<int> id(total, -1), node;  // graph index <-> kept index, file order
  for (int v = 0; v < total; ++v)
    if (keep[v]) {
      id[v] = static_cast<int>(node.size());
      node.push_back(v);
    }
  const int n = static_cast<int>(node.size());
  std::vector<std::vector<int>> succ(n), pred(n);
  for (auto [a, b] : g.edges)
    if (keep[a] && keep[b]) {
      succ[id[a]].push_back(id[b]);
      pred[id[b]].push_back(id[a]);
    }
  // Strict ancestors and descendants (the graph is acyclic: parse checked).
  std::vector<Bits> anc(n, Bits(n)), desc(n, Bits(n));
  std::vector<int> order, indeg(n);
  for (int v = 0; v < n; ++v) indeg[v] = static_cast<int>(pred[v].size());
  for (int v = 0; v < n; ++v)
    if (indeg[v] == 0) order.push_back(v);
  for (size_t i = 0; i < order.size(); ++i)
    for (int c : succ[order[i]])
      if (--indeg[c] == 0) order.push_back(c);
  for (int v : order)
    for (int p : pred[v]) {
      anc[v].add(p);
      anc[v].merge(anc[p]);
    }
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (int c : succ[*it]) {
      desc[*it].add(c);
      desc[*it].merge(desc[c]);
    }

  using Key = std::vector<int>;  // an antichain, sorted
  // The antichain plus every producer of one of its nodes that feeds a node
  // outside that node's ancestry (PipeDream's augment_antichain).
  auto augment = [&](const Key& a) {
    std::set<int> aug(a.begin(), a.end());
    for (int x : a)
      for (int p = 0; p < n; ++p) {
        if (!anc[x].has(p)) continue;
        for (int c : succ[p])
          if (!anc[x].has(c) && c != x) aug.insert(p);
      }
    return Key(aug.begin(), aug.end());
  };
  // Drops every node with a descendant in the set (deaugment_augmented_antichain).
  auto deaugment = [&](const Key& aug) {
    Key a;
    for (int x : aug) {
      bool covered = std::any_of(aug.begin(), aug.end(), [&](int y) { return desc[x].has(y); });
      if (!covered) a.push_back(x);
    }
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
    return a;
  };
  auto next_antichains = [&](const Key& a) {
    const Key aug = augment(a);
    std::vector<Key> next;
    for (int u : aug)
      for (int x : succ[u]) {
        if (std::binary_search(a.begin(), a.end(), x)) continue;
        bool ready = std::none_of(aug.begin(), aug.end(), [&](int y) { return desc[x].has(y); });
        if (!ready) continue;
        Key replaced = aug;
        std::replace(replaced.begin(), replaced.end(), u, x);
        next.push_back(deaugment(replaced));
      }
    return next;
  };

  // Breadth-first from the first source, as antichain_dag().
  std::map<Key, int> index;
  std::vector<Key> found;
  std::vector<std::vector<int>> dag_pred;
  int first = -1;
  for (int v = 0; v < n && first < 0; ++v)
    if (pred[v].empty()) first = v;
  if (first < 0) return {};
  found.push_back({first});
  index[found[0]] = 0;
  dag_pred.emplace_back();
  std::deque<int> queue{0};
  std::vector<char> expanded(1, 0);
  while (!queue.empty()) {
    const int s = queue.front();
    queue.pop_front();
    if (expanded[s]) continue;
    expanded[s] = 1;
    for (Key& k : next_antichains(found[s])) {
      auto [it, fresh] = index.emplace(k, static_cast<int>(found.size()));
      if (fresh) {
        found.push_back(k);
        dag_pred.emplace_back();
        expanded.push_back(0);
      }
      dag_pred[it->second].push_back(s);
      queue.push_back(it->second);
    }
  }

  // Each state's layers: its augmented antichain and their ancestors.
  const int ns = static_cast<int>(found.size());
  std::vector<Bits> layers(ns, Bits(n));
  std::vector<double> out_bytes(ns, 0);
  for (int s = 0; s < ns; ++s)
    for (int x : augment(found[s])) {
      layers[s].add(x);
      layers[s].merge(anc[x]);
      out_bytes[s] += g.nodes[node[x]].activation_total();
    }
  // Listed by size: a state's DAG predecessors hold strictly fewer layers.
  std::vector<int> by_size(ns);
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](int a, int b) { return layers[a].count() < layers[b].count(); });
  std::vector<int> rank(ns);
  for (int i = 0; i < ns; ++i) rank[by_size[i]] = i;

  PipeDreamStates r;
  std::vector<Bits> inside(ns, Bits(ns));  // by rank
  for (int i = 0; i < ns; ++i) {
    const int s = by_size[i];
    for (int p : dag_pred[s]) {
      inside[i].add(rank[p]);
      inside[i].merge(inside[rank[p]]);
    }
    double c = 0, params = 0;
    std::vector<std::string> ids;
    for (int x = 0; x < n; ++x) {
      if (!layers[s].has(x)) continue;
      const auto& nd = g.nodes[node[x]];
      c += nd.fwd_ms + nd.bwd_ms;
      params += nd.parameter_size;
      ids.push_back(nd.id);
    }
    r.states.compute_ms.push_back(c);
    r.states.param_bytes.push_back(params);
    r.states.out_bytes.push_back(out_bytes[s]);
    std::vector<int> in_list;
    for (int k = 0; k < i; ++k)
      if (inside[i].has(k)) in_list.push_back(k);
    r.states.inside.push_back(std::move(in_list));
    r.node_ids.push_back(std::move(ids));
  }
  return r;
}

std::vector<std::string> stage_nodes(const PipeDreamStates& s, int from_state, int to_state) {
  std::vector<std::string> before = from_state >= 0 ? s.node_ids.at(from_state) : std::vector<std::string>{};
  std::set<std::string> skip(before.begin(), before.end());
  std::vector<std::string> out;
  for (const auto& id : s.node_ids.at(to_state))
    if (!skip.count(id)) out.push_back(id);
  return out;
}

}  // namespace pw

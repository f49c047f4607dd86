#include "core/model/graph_order.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/model/pipedream_graph.h"

namespace pw {
namespace {

// The down-set lattice: sets in breadth-first order (every subset before
// its supersets), each with its weight and the sets one layer smaller.
struct Lattice {
  int words = 0;
  std::vector<std::uint64_t> bits;  // `words` per set
  std::vector<double> weight;
  std::vector<int> below_start, below;  // CSR: below[below_start[d] .. below_start[d + 1])
  bool complete = false;
  std::size_t size() const { return weight.size(); }
  bool has(std::size_t d, int v) const { return (bits[d * words + (v >> 6)] >> (v & 63)) & 1; }
};

Lattice build_lattice(const ModelProfile& p, std::size_t max_states) {
  Lattice L;
  const int n = p.size();
  L.words = (n + 63) / 64;
  std::vector<std::vector<int>> consumers(n);
  for (int v = 0; v < n; ++v)
    for (int u : p.inputs[v]) consumers[u].push_back(v);
  // Zobrist hashing; equal hashes are confirmed on the bits.
  std::vector<std::uint64_t> zob(n);
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& z : zob) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    z = x;
  }
  std::unordered_multimap<std::uint64_t, int> index;
  std::vector<std::uint64_t> hash{0};
  std::vector<std::vector<int>> addable(1), below(1);
  for (int v = 0; v < n; ++v)
    if (p.inputs[v].empty()) addable[0].push_back(v);
  L.bits.assign(L.words, 0);
  L.weight.push_back(0);
  index.emplace(0, 0);
  std::vector<std::uint64_t> next(L.words);
  for (std::size_t i = 0; i < L.size(); ++i) {
    for (int v : addable[i]) {
      std::copy(L.bits.begin() + i * L.words, L.bits.begin() + (i + 1) * L.words, next.begin());
      next[v >> 6] |= 1ull << (v & 63);
      std::uint64_t h = hash[i] ^ zob[v];
      int found = -1;
      auto range = index.equal_range(h);
      for (auto it = range.first; it != range.second && found < 0; ++it)
        if (std::equal(next.begin(), next.end(), L.bits.begin() + static_cast<std::size_t>(it->second) * L.words))
          found = it->second;
      if (found < 0) {
        if (L.size() >= max_states) return L;
        found = static_cast<int>(L.size());
        index.emplace(h, found);
        hash.push_back(h);
        L.bits.insert(L.bits.end(), next.begin(), next.end());
        L.weight.push_back(L.weight[i] + p.layers[v].fwd_ms + p.layers[v].bwd_ms);
        below.emplace_back();
        // What the new set can take next: the old candidates but v, and
        // v's consumers whose producers are now all in.
        std::vector<int> a;
        for (int w : addable[i])
          if (w != v) a.push_back(w);
        for (int w : consumers[v]) {
          bool ready = true;
          for (int u : p.inputs[w]) ready = ready && ((next[u >> 6] >> (u & 63)) & 1);
          if (ready) a.push_back(w);
        }
        addable.push_back(std::move(a));
      }
      below[found].push_back(static_cast<int>(i));
    }
    std::vector<int>().swap(addable[i]);
  }
  L.below_start.push_back(0);
  for (const auto& b : below) {
    L.below.insert(L.below.end(), b.begin(), b.end());
    L.below_start.push_back(static_cast<int>(L.below.size()));
  }
  L.complete = true;
  return L;
}

// Whether k stages of at most t cover the whole graph; fills the chain
// D1 c ... c Dk = all (as lattice indices) when asked and it does.
// best[s][D] / arg[s][D]: the heaviest sub-down-set of D that s + 1
// stages cover, and which one.
struct Cover {
  const Lattice& L;
  std::vector<std::vector<double>> best;
  std::vector<std::vector<int>> arg;
  Cover(const Lattice& l, int k) : L(l), best(k, std::vector<double>(l.size())), arg(k, std::vector<int>(l.size())) {}

  bool operator()(int k, double t, std::vector<int>* chain) {
    const std::size_t m = L.size();
    const double none = -std::numeric_limits<double>::infinity();
    int stages = -1;
    for (int s = 1; s <= k; ++s) {
      double prev_full = s == 1 ? 0.0 : best[s - 2][m - 1];
      if (L.weight[m - 1] - prev_full <= t) {
        stages = s;
        break;
      }
      if (s == k) break;
      auto& cur = best[s - 1];
      auto& cur_arg = arg[s - 1];
      const double* prev = s == 1 ? nullptr : best[s - 2].data();
      for (std::size_t d = 0; d < m; ++d) {
        double b = L.weight[d] - (prev ? prev[d] : 0.0) <= t ? L.weight[d] : none;
        int a = static_cast<int>(d);
        for (int j = L.below_start[d]; j < L.below_start[d + 1]; ++j) {
          int e = L.below[j];
          if (cur[e] > b) {
            b = cur[e];
            a = cur_arg[e];
          }
        }
        cur[d] = b;
        cur_arg[d] = a;
      }
    }
    if (stages < 0) return false;
    if (chain) {
      chain->assign(1, static_cast<int>(m - 1));
      for (int s = stages - 1; s >= 1; --s) chain->push_back(arg[s - 1][chain->back()]);
      std::reverse(chain->begin(), chain->end());
    }
    return true;
  }
};

// Best contiguous split of the current order, an upper bound to start from.
double linear_optimum(const ModelProfile& p, int k) {
  const int n = p.size();
  std::vector<double> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + p.layers[i].fwd_ms + p.layers[i].bwd_ms;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> prev(n + 1, inf), cur(n + 1);
  prev[0] = 0;
  for (int s = 1; s <= k; ++s) {
    std::fill(cur.begin(), cur.end(), inf);
    for (int j = 1; j <= n; ++j)
      for (int i = j - 1; i >= 0; --i) {
        double stage = prefix[j] - prefix[i];
        if (stage >= cur[j]) break;  // longer last stages only get heavier
        cur[j] = std::min(cur[j], std::max(prev[i], stage));
      }
    prev.swap(cur);
  }
  return prev[n];
}

}  // namespace

ModelProfile reorder_layers(const ModelProfile& p, const std::vector<int>& order) {
  const int n = p.size();
  if (static_cast<int>(order.size()) != n) throw std::invalid_argument("reorder_layers: order has the wrong size");
  std::vector<int> pos(n, -1);
  for (int i = 0; i < n; ++i) pos[order[i]] = i;
  ModelProfile q = p;
  q.layers.clear();
  q.inputs.assign(n, {});
  for (int i = 0; i < n; ++i) {
    q.layers.push_back(p.layers[order[i]]);
    if (p.inputs.empty()) {
      if (order[i] > 0) q.inputs[i].push_back(pos[order[i] - 1]);
    } else {
      for (int u : p.inputs[order[i]]) q.inputs[i].push_back(pos[u]);
    }
    std::sort(q.inputs[i].begin(), q.inputs[i].end());
    if (!q.inputs[i].empty() && q.inputs[i].back() >= i)
      throw std::invalid_argument("reorder_layers: layer " + q.layers[i].name + " would come before its producer");
  }
  q.cut_bytes = cut_bytes_of(q.layers, q.inputs);
  return q;
}

ModelProfile order_for_stages(const ModelProfile& p, int stages, std::size_t max_states) {
  const int n = p.size();
  if (p.inputs.empty() || stages < 2 || n <= stages) return p;
  bool chain = true;
  for (int v = 0; v < n && chain; ++v) chain = p.inputs[v].size() <= 1 && (p.inputs[v].empty() ? v == 0 : p.inputs[v][0] == v - 1);
  if (chain) return p;
  Lattice L = build_lattice(p, max_states);
  if (!L.complete) return p;

  double hi = linear_optimum(p, stages) * (1 + 1e-12), lo = L.weight.back() / stages;
  for (const auto& l : p.layers) lo = std::max(lo, l.fwd_ms + l.bwd_ms);
  lo *= 1 - 1e-12;
  Cover cover(L, stages);
  if (cover(stages, lo, nullptr)) hi = lo;
  while (hi - lo > 1e-9 * hi) {
    double mid = (lo + hi) / 2;
    (cover(stages, mid, nullptr) ? hi : lo) = mid;
  }
  std::vector<int> chain_sets;
  cover(stages, hi, &chain_sets);

  // Part of each layer: the first down-set of the chain holding it.
  std::vector<int> part(n, static_cast<int>(chain_sets.size()));
  for (int s = static_cast<int>(chain_sets.size()) - 1; s >= 0; --s)
    for (int v = 0; v < n; ++v)
      if (L.has(chain_sets[s], v)) part[v] = s;
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return part[a] < part[b]; });
  return reorder_layers(p, order);
}

}  // namespace pw

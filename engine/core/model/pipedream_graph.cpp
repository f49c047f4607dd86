#include "core/model/pipedream_graph.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/spec/utf8.h"

namespace pw {
namespace {

const std::string kSep = " -- ";

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t at = s.find(sep, pos);
    if (at == std::string::npos) {
      out.push_back(s.substr(pos));
      return out;
    }
    out.push_back(s.substr(pos, at - pos));
    pos = at + sep.size();
  }
}

[[noreturn]] void fail(const std::string& name, int line, const std::string& reason) {
  throw std::runtime_error(name + ":" + std::to_string(line) + ": " + reason);
}

bool valid_id(const std::string& id) {
  return !id.empty() && id.find_first_of(" \t\r\n") == std::string::npos;
}

// A non-negative finite number, the whole token.
bool parse_number(const std::string& text, double& out) {
  std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && std::isfinite(out) && out >= 0;
}

PipeDreamNode parse_node_line(const std::string& line, int lineno, const std::string& name) {
  auto tokens = split(line, kSep);
  // The metadata is the first token after the description that starts with
  // the first field; anything after it may only be PipeDream's stage_id.
  size_t meta = 0;
  for (size_t i = 2; i < tokens.size(); ++i)
    if (starts_with(trim(tokens[i]), "forward_compute_time=")) {
      meta = i;
      break;
    }
  if (tokens.size() < 3 || meta == 0)
    fail(name, lineno,
         "expected \"nodeID -- description -- forward_compute_time=..., backward_compute_time=..., "
         "activation_size=..., parameter_size=...\"");
  for (size_t i = meta + 1; i < tokens.size(); ++i)
    if (!starts_with(trim(tokens[i]), "stage_id="))
      fail(name, lineno, "unexpected text after the fields: \"" + tokens[i] + "\"");
  PipeDreamNode n;
  n.line = lineno;
  n.id = trim(tokens[0]);
  if (!valid_id(n.id)) fail(name, lineno, "bad node id \"" + tokens[0] + "\"");
  for (size_t i = 1; i < meta; ++i) n.desc += (i > 1 ? kSep : "") + tokens[i];
  n.desc = trim(n.desc);

  std::set<std::string> seen;
  for (const auto& raw : split(tokens[meta], ",")) {
    std::string field = trim(raw);
    auto eq = field.find('=');
    if (eq == std::string::npos) fail(name, lineno, "field \"" + field + "\" has no '='");
    std::string key = field.substr(0, eq), value = field.substr(eq + 1);
    if (!seen.insert(key).second) fail(name, lineno, "field " + key + " given twice");
    auto number = [&](double& out) {
      if (!parse_number(value, out))
        fail(name, lineno, key + " must be a non-negative number, got \"" + value + "\"");
    };
    if (key == "forward_compute_time") {
      number(n.fwd_ms);
    } else if (key == "backward_compute_time") {
      number(n.bwd_ms);
    } else if (key == "parameter_size") {
      number(n.parameter_size);
    } else if (key == "activation_size") {
      std::string v = trim(value);
      if (!v.empty() && v.front() == '[') {
        if (v.back() != ']') fail(name, lineno, "activation_size list must end with ']', got \"" + value + "\"");
        for (const auto& part : split(v.substr(1, v.size() - 2), ";")) {
          double x;
          if (!parse_number(part, x))
            fail(name, lineno, "activation_size list entry must be a non-negative number, got \"" + part + "\"");
          n.activation_sizes.push_back(x);
        }
      } else {
        double x;
        number(x);
        n.activation_sizes.push_back(x);
      }
    } else {
      fail(name, lineno, "unknown field \"" + key + "\"");
    }
  }
  for (const char* k : {"forward_compute_time", "backward_compute_time", "activation_size", "parameter_size"})
    if (!seen.count(k)) fail(name, lineno, std::string("missing field ") + k);
  return n;
}

// Trailing digits of an id ("node12" -> 12), or -1.
long long id_number(const std::string& id) {
  size_t b = id.size();
  while (b > 0 && std::isdigit(static_cast<unsigned char>(id[b - 1]))) --b;
  if (b == id.size() || id.size() - b > 15) return -1;
  return std::stoll(id.substr(b));
}

bool is_input_source(const PipeDreamNode& n, int in_degree) { return in_degree == 0 && starts_with(n.desc, "Input"); }

// "Input(batch_size=8, device=h200)" -> {batch_size: 8, device: h200}.
std::map<std::string, std::string> header_fields(const std::string& desc) {
  std::map<std::string, std::string> out;
  auto open = desc.find('('), close = desc.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  for (const auto& part : split(desc.substr(open + 1, close - open - 1), ",")) {
    auto eq = part.find('=');
    if (eq != std::string::npos) out[trim(part.substr(0, eq))] = trim(part.substr(eq + 1));
  }
  return out;
}

std::string number_text(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

double PipeDreamNode::activation_total() const {
  double s = 0;
  for (double a : activation_sizes) s += a;
  return s;
}

bool looks_like_pipedream_graph(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty()) continue;
    return line[0] != '\t' && line[0] != ' ' && split(line, kSep).size() >= 3;
  }
  return false;
}

PipeDreamGraph parse_pipedream_graph(const std::string& text, const std::string& name) {
  PipeDreamGraph g;
  std::unordered_map<std::string, int> index;
  struct RawEdge {
    std::string from, to;
    int line;
  };
  std::vector<RawEdge> raw_edges;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Layer names go into plans, traces and recordings, all JSON: the text is
    // UTF-8 or refused here, not by a JSON writer after a recording began.
    if (std::size_t bad = 0; !is_valid_utf8(line, &bad))
      fail(name, lineno, "not valid UTF-8 (" + utf8_error_at(line, bad) + " of the line)");
    if (trim(line).empty()) continue;
    if (line[0] == '\t' || line[0] == ' ') {
      auto ends = split(trim(line), kSep);
      if (ends.size() != 2 || !valid_id(trim(ends[0])) || !valid_id(trim(ends[1])))
        fail(name, lineno, "expected an edge \"<TAB>nodeA -- nodeB\", got \"" + trim(line) + "\"");
      raw_edges.push_back({trim(ends[0]), trim(ends[1]), lineno});
      continue;
    }
    PipeDreamNode n = parse_node_line(line, lineno, name);
    auto [it, fresh] = index.emplace(n.id, static_cast<int>(g.nodes.size()));
    if (!fresh)
      fail(name, lineno, "node " + n.id + " declared twice (first on line " +
                             std::to_string(g.nodes[it->second].line) + ")");
    g.nodes.push_back(std::move(n));
  }
  if (g.nodes.empty()) fail(name, std::max(lineno, 1), "no nodes: not a PipeDream graph.txt");

  std::set<std::pair<int, int>> seen;
  for (const auto& e : raw_edges) {
    auto a = index.find(e.from), b = index.find(e.to);
    if (a == index.end()) fail(name, e.line, "edge from undeclared node " + e.from);
    if (b == index.end()) fail(name, e.line, "edge to undeclared node " + e.to);
    if (a->second == b->second) fail(name, e.line, "edge from " + e.from + " to itself");
    if (seen.insert({a->second, b->second}).second) g.edges.emplace_back(a->second, b->second);
  }

  // A cycle would make every linear order wrong: find one now, with a line.
  std::vector<int> indeg(g.nodes.size(), 0);
  std::vector<std::vector<int>> out(g.nodes.size());
  for (auto [a, b] : g.edges) {
    out[a].push_back(b);
    ++indeg[b];
  }
  std::vector<int> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (indeg[i] == 0) ready.push_back(static_cast<int>(i));
  size_t done = 0;
  while (!ready.empty()) {
    int u = ready.back();
    ready.pop_back();
    ++done;
    for (int v : out[u])
      if (--indeg[v] == 0) ready.push_back(v);
  }
  if (done != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (indeg[i] > 0) fail(name, g.nodes[i].line, "the edges form a cycle through node " + g.nodes[i].id);
  }
  return g;
}

int pipedream_profiled_minibatch(const PipeDreamGraph& g) {
  std::vector<int> indeg(g.nodes.size(), 0);
  for (auto [a, b] : g.edges) ++indeg[b];
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& n = g.nodes[i];
    if (!is_input_source(n, indeg[i])) continue;
    auto h = header_fields(n.desc);
    if (h.count("batch_size")) {
      int b = std::atoi(h["batch_size"].c_str());
      if (b > 0) return b;
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& n = g.nodes[i];
    double a = n.activation_total();
    if (!is_input_source(n, indeg[i]) || a <= 0) continue;
    for (double s : {224.0, 299.0, 331.0, 32.0}) {
      double per = 3 * s * s * 4;
      double b = a / per;
      if (b >= 1 && b == std::floor(b)) return static_cast<int>(b);
    }
  }
  for (const auto& n : g.nodes) {
    if (!starts_with(n.desc, "LSTM(") || n.activation_sizes.size() < 3) continue;
    auto args = split(n.desc.substr(5), ",");
    if (args.size() < 2) continue;
    double hidden = std::atof(trim(args[1]).c_str());
    double h = n.activation_sizes[1];
    if (hidden <= 0 || h != n.activation_sizes[2]) continue;
    double b = h / (hidden * 4);
    if (b >= 1 && b == std::floor(b)) return static_cast<int>(b);
  }
  return 0;
}

std::vector<std::uint64_t> cut_bytes_of(const std::vector<LayerProfile>& layers,
                                        const std::vector<std::vector<int>>& inputs) {
  int n = static_cast<int>(layers.size());
  if (n < 2) return {};
  std::vector<std::uint64_t> cut(n - 1, 0);
  if (inputs.empty()) {
    for (int i = 0; i + 1 < n; ++i) cut[i] = layers[i].output_bytes;
    return cut;
  }
  // A tensor crosses every cut between its producer and its last consumer.
  std::vector<int> last_use(n, -1);
  for (int v = 0; v < n; ++v)
    for (int u : inputs[v]) last_use[u] = std::max(last_use[u], v);
  std::vector<long double> diff(n, 0);
  for (int u = 0; u < n; ++u)
    if (last_use[u] > u) {
      diff[u] += layers[u].output_bytes;
      diff[last_use[u]] -= layers[u].output_bytes;
    }
  long double run = 0;
  for (int i = 0; i + 1 < n; ++i) {
    run += diff[i];
    cut[i] = static_cast<std::uint64_t>(run);
  }
  return cut;
}

ModelProfile pipedream_graph_to_profile(const PipeDreamGraph& g, const std::string& source) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<std::vector<int>> in(n), out(n);
  for (auto [a, b] : g.edges) {
    out[a].push_back(b);
    in[b].push_back(a);
  }
  std::vector<bool> keep(n, true);
  for (int i = 0; i < n; ++i) {
    if (is_input_source(g.nodes[i], static_cast<int>(in[i].size()))) keep[i] = false;
    if (out[i].empty() && starts_with(g.nodes[i].desc, "__getitem__")) keep[i] = false;
  }
  bool numeric = true;
  for (int i = 0; i < n; ++i)
    if (keep[i] && id_number(g.nodes[i].id) < 0) numeric = false;

  // Kahn's algorithm over the kept nodes, smallest (id number, file
  // position) first.
  using Key = std::pair<long long, int>;
  auto key = [&](int i) { return Key{numeric ? id_number(g.nodes[i].id) : 0, i}; };
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  std::vector<int> indeg(n, 0);
  for (int v = 0; v < n; ++v)
    for (int u : in[v])
      if (keep[u] && keep[v]) ++indeg[v];
  for (int i = 0; i < n; ++i)
    if (keep[i] && indeg[i] == 0) ready.push(key(i));
  std::vector<int> order, pos(n, -1);
  while (!ready.empty()) {
    int u = ready.top().second;
    ready.pop();
    pos[u] = static_cast<int>(order.size());
    order.push_back(u);
    for (int v : out[u])
      if (keep[v] && --indeg[v] == 0) ready.push(key(v));
  }

  if (order.empty()) throw std::runtime_error(source + ": no layers besides Input nodes");
  ModelProfile p;
  p.source = source;
  p.microbatch_size = pipedream_profiled_minibatch(g);
  for (int i = 0; i < n; ++i)
    if (!keep[i] && is_input_source(g.nodes[i], static_cast<int>(in[i].size()))) {
      auto h = header_fields(g.nodes[i].desc);
      if (h.count("device")) p.device = h["device"];
    }
  p.inputs.resize(order.size());
  for (int u : order) {
    const auto& node = g.nodes[u];
    LayerProfile l;
    l.name = node.id;
    l.type = node.desc;
    l.fwd_ms = node.fwd_ms;
    l.bwd_ms = node.bwd_ms;
    l.output_bytes = static_cast<std::uint64_t>(std::llround(node.activation_total()));
    l.activation_bytes = l.output_bytes;
    l.param_bytes = static_cast<std::uint64_t>(std::llround(node.parameter_size));
    double input = 0;
    auto& producers = p.inputs[pos[u]];
    for (int v : in[u]) {
      input += g.nodes[v].activation_total();
      if (keep[v]) producers.push_back(pos[v]);
    }
    std::sort(producers.begin(), producers.end());
    l.input_bytes = static_cast<std::uint64_t>(std::llround(input));
    p.layers.push_back(std::move(l));
  }
  p.cut_bytes = cut_bytes_of(p.layers, p.inputs);
  return p;
}

std::string pipedream_graph_text(const ModelProfile& p) {
  const int n = p.size();
  // Layer names are the node ids when they can be (unique, no blanks).
  std::set<std::string> names;
  bool use_names = true;
  for (const auto& l : p.layers)
    if (!valid_id(l.name) || l.name.find(kSep) != std::string::npos || !names.insert(l.name).second) use_names = false;
  std::vector<std::string> ids(n);
  names.clear();
  for (int i = 0; i < n; ++i) {
    ids[i] = use_names ? p.layers[i].name : "node" + std::to_string(i + 1);
    names.insert(ids[i]);
  }
  auto fresh_id = [&](std::string base) {
    while (names.count(base)) base += "_";
    names.insert(base);
    return base;
  };
  auto desc_of = [](const std::string& type) {
    std::string d = type.empty() ? "layer" : type;
    for (auto& c : d)
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    size_t at;
    while ((at = d.find(kSep)) != std::string::npos) d.replace(at, kSep.size(), " - ");
    return d;
  };
  auto producers = [&](int i) -> std::vector<int> {
    if (!p.inputs.empty()) return p.inputs[i];
    return i > 0 ? std::vector<int>{i - 1} : std::vector<int>{};
  };

  // Input nodes carry what a layer reads beyond its producers' outputs
  // (the data); one node per distinct size.
  std::map<std::uint64_t, std::string> input_nodes;
  std::vector<std::pair<std::string, std::string>> edges;
  std::ostringstream nodes_text;
  auto node_line = [&](const std::string& id, const std::string& desc, double f, double b, std::uint64_t act,
                       std::uint64_t params) {
    nodes_text << id << kSep << desc << kSep << "forward_compute_time=" << number_text(f)
               << ", backward_compute_time=" << number_text(b) << ", activation_size=" << act
               << ".0, parameter_size=" << params << ".0\n";
  };
  for (int i = 0; i < n; ++i) {
    std::uint64_t from_producers = 0;
    auto prod = producers(i);
    for (int u : prod) from_producers += p.layers[u].output_bytes;
    std::uint64_t extra = p.layers[i].input_bytes > from_producers ? p.layers[i].input_bytes - from_producers : 0;
    if (prod.empty() || extra > 0) {
      auto it = input_nodes.find(extra);
      if (it == input_nodes.end()) {
        std::string id = fresh_id("input" + std::to_string(input_nodes.size()));
        std::string desc = "Input";
        if (input_nodes.empty())
          desc += "(batch_size=" + std::to_string(p.microbatch_size) +
                  (p.device.empty() ? "" : ", device=" + desc_of(p.device)) + ")";
        node_line(id, desc, 0, 0, extra, 0);
        it = input_nodes.emplace(extra, id).first;
      }
      edges.emplace_back(it->second, ids[i]);
    }
    for (int u : prod) edges.emplace_back(ids[u], ids[i]);
  }
  for (int i = 0; i < n; ++i) {
    const auto& l = p.layers[i];
    node_line(ids[i], desc_of(l.type), l.fwd_ms, l.bwd_ms, l.output_bytes, l.param_bytes);
  }
  std::ostringstream text;
  text << nodes_text.str();
  for (const auto& [a, b] : edges) text << "\t" << a << kSep << b << "\n";
  return text.str();
}

}  // namespace pw

#include "runtime/split_backward.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace pw::rt {
namespace ag = torch::autograd;

namespace {

// Where B leaves the gradient arriving at an intermediate for W.
struct Slot {
  ag::variable_list grads;
  bool armed = false;  // only B records; W runs the node again
};

class RecordGradients final : public ag::FunctionPreHook {
 public:
  explicit RecordGradients(std::shared_ptr<Slot> slot) : slot_(std::move(slot)) {}
  ag::variable_list operator()(const ag::variable_list& grads) override {
    if (slot_->armed) slot_->grads = grads;
    return grads;
  }

 private:
  std::shared_ptr<Slot> slot_;
};

// W's work for some parameters: the nodes to start from and the
// parameters' accumulators to stop at.
struct Group {
  std::vector<std::shared_ptr<ag::Node>> starts;
  std::vector<std::shared_ptr<Slot>> slots;
  ag::edge_list accumulators;
  std::uint64_t mask = 0;
};

// The segment's graph, each node's reach: whether the input's gradient
// flows through it, and which parameters' gradients do (a bit each).
struct Reach {
  bool input = false;
  std::uint64_t params = 0;
};

class GraphScan {
 public:
  GraphScan(const ag::Node* input, std::unordered_map<const ag::Node*, int> param_bits)
      : input_(input), bits_(std::move(param_bits)) {}
  const Reach& of(const ag::Node* n) {
    if (auto it = memo_.find(n); it != memo_.end()) return it->second;
    Reach r;
    if (n == input_) r.input = true;
    if (auto b = bits_.find(n); b != bits_.end()) r.params |= std::uint64_t{1} << b->second;
    for (const auto& e : n->next_edges()) {
      if (!e.function) continue;
      const Reach& c = of(e.function.get());
      r.input = r.input || c.input;
      r.params |= c.params;
    }
    return memo_[n] = r;
  }

 private:
  const ag::Node* input_;
  std::unordered_map<const ag::Node*, int> bits_;
  std::unordered_map<const ag::Node*, Reach> memo_;
};

ag::Engine& engine() { return ag::Engine::get_default_engine(); }

}  // namespace

struct SplitBackward::State {
  ag::Edge root;
  at::Tensor grad_out;  // kept for W only when it replays the segment
  ag::edge_list accumulators;
  std::vector<Group> groups;
  bool replay = false;
  bool done_b = false;
};

SplitBackward::SplitBackward() = default;
SplitBackward::~SplitBackward() = default;
SplitBackward::SplitBackward(SplitBackward&&) noexcept = default;
SplitBackward& SplitBackward::operator=(SplitBackward&&) noexcept = default;

at::Tensor SplitBackward::input_gradient(const ag::Edge& root, const at::Tensor& grad_out, const at::Tensor& input,
                                         const std::vector<at::Tensor>& params) {
  s_ = std::make_unique<State>();
  s_->root = root;
  std::unordered_map<const ag::Node*, int> bits;
  std::unordered_set<const ag::Node*> listed;
  bool too_many = false;
  for (const auto& p : params) {
    if (!p.requires_grad()) continue;
    auto acc = ag::impl::try_get_grad_accumulator(p);
    if (!acc || !listed.insert(acc.get()).second) continue;  // not used by this forward, or listed twice
    if (s_->accumulators.size() < 64)
      bits.emplace(acc.get(), static_cast<int>(s_->accumulators.size()));
    else
      too_many = true;  // the masks below have 64 bits
    s_->accumulators.emplace_back(acc, 0);
  }
  if (!root.function) {  // the output does not depend on anything that learns
    s_->done_b = true;
    return at::Tensor();
  }
  ag::Edge input_edge = input.defined() && input.requires_grad() ? ag::impl::gradient_edge(input) : ag::Edge();
  GraphScan scan(input_edge.function.get(), bits);
  bool has_input = input_edge.function && scan.of(root.function.get()).input;
  s_->replay = !has_input || too_many;

  if (!s_->replay) {
    // Intermediates: nodes on the input's path with an edge leaving it
    // towards parameters. The walk visits every node on the input's path.
    std::vector<std::pair<std::shared_ptr<ag::Node>, std::uint64_t>> inter;  // node, parameters it feeds
    std::vector<std::uint64_t> below;  // parameters reachable through its input-path children
    std::unordered_map<const ag::Node*, bool> seen;
    std::vector<std::shared_ptr<ag::Node>> todo{root.function};
    while (!todo.empty()) {
      auto n = todo.back();
      todo.pop_back();
      if (seen[n.get()]) continue;
      seen[n.get()] = true;
      std::uint64_t own = 0, deep = 0;
      for (const auto& e : n->next_edges()) {
        if (!e.function) continue;
        const Reach& c = scan.of(e.function.get());
        if (c.input) {
          deep |= c.params;
          todo.push_back(e.function);
        } else {
          own |= c.params;
        }
      }
      if (own) {
        inter.emplace_back(n, own);
        below.push_back(deep);
      }
    }
    // Parameters shared by intermediates form one group (one W pass).
    std::vector<int> group_of(inter.size(), -1);
    for (size_t i = 0; i < inter.size(); ++i) {
      int g = -1;
      for (size_t k = 0; k < s_->groups.size(); ++k)
        if (s_->groups[k].mask & inter[i].second) {
          if (g < 0) {
            g = static_cast<int>(k);
          } else {  // inter[i] joins two groups: merge k into g
            auto& into = s_->groups[g];
            auto& from = s_->groups[k];
            into.mask |= from.mask;
            into.starts.insert(into.starts.end(), from.starts.begin(), from.starts.end());
            from.mask = 0;
            from.starts.clear();
          }
        }
      if (g < 0) {
        g = static_cast<int>(s_->groups.size());
        s_->groups.emplace_back();
      }
      s_->groups[g].mask |= inter[i].second;
      s_->groups[g].starts.push_back(inter[i].first);
    }
    // A group's parameter also reachable beneath one of its starts would
    // receive that gradient twice in W.
    for (size_t i = 0; i < inter.size() && !s_->replay; ++i)
      for (const auto& g : s_->groups)
        if ((g.mask & inter[i].second) && (below[i] & g.mask)) s_->replay = true;
  }

  if (s_->replay) {
    s_->groups.clear();
    s_->grad_out = grad_out;
  } else {
    std::vector<Group> groups;
    for (auto& g : s_->groups) {
      if (!g.mask) continue;
      for (size_t b = 0; b < s_->accumulators.size(); ++b)
        if (g.mask >> b & 1) g.accumulators.push_back(s_->accumulators[b]);
      for (auto& n : g.starts) {
        auto slot = std::make_shared<Slot>();
        slot->armed = true;
        n->add_pre_hook(std::make_unique<RecordGradients>(slot));
        g.slots.push_back(slot);
      }
      groups.push_back(std::move(g));
    }
    s_->groups = std::move(groups);
  }

  at::Tensor d_input;
  if (has_input) {
    auto out = engine().execute({root}, {grad_out}, /*keep_graph=*/true, /*create_graph=*/false,
                                /*accumulate_grad=*/false, {input_edge});
    d_input = out.at(0);
  }
  for (auto& g : s_->groups)
    for (auto& slot : g.slots) slot->armed = false;
  s_->done_b = true;
  return d_input;
}

void SplitBackward::weight_gradient() {
  if (!s_ || !s_->done_b) throw std::logic_error("weight gradient before the input gradient");
  if (s_->replay) {
    if (s_->root.function && !s_->accumulators.empty())
      engine().execute({s_->root}, {s_->grad_out}, /*keep_graph=*/false, /*create_graph=*/false,
                       /*accumulate_grad=*/true, s_->accumulators);
  } else {
    for (auto& g : s_->groups) {
      ag::edge_list roots;
      ag::variable_list grads;
      for (size_t i = 0; i < g.starts.size(); ++i)
        for (size_t k = 0; k < g.slots[i]->grads.size(); ++k)
          if (g.slots[i]->grads[k].defined()) {
            roots.emplace_back(g.starts[i], static_cast<uint32_t>(k));
            grads.push_back(g.slots[i]->grads[k]);
          }
      if (!roots.empty())
        engine().execute(roots, grads, /*keep_graph=*/false, /*create_graph=*/false, /*accumulate_grad=*/true,
                         g.accumulators);
    }
  }
  s_.reset();
}

std::int64_t SplitBackward::held_bytes() const {
  if (!s_) return 0;
  std::int64_t n = s_->grad_out.defined() ? static_cast<std::int64_t>(s_->grad_out.nbytes()) : 0;
  for (const auto& g : s_->groups)
    for (const auto& slot : g.slots)
      for (const auto& t : slot->grads)
        if (t.defined()) n += static_cast<std::int64_t>(t.nbytes());
  return n;
}

bool SplitBackward::replays_segment() const { return s_ && s_->replay; }

}  // namespace pw::rt

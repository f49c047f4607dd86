#include "core/schedule/comm_order.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

namespace pw {
namespace {

std::tuple<int, int, int> key(const MessageId& m) { return {static_cast<int>(m.dir), m.microbatch, m.vstage}; }

struct Traffic {
  std::optional<MessageId> needs;  // received from `from` before the action runs
  int from = -1;
  std::optional<MessageId> makes;  // sent to `to` after it
  int to = -1;
};

// What one action receives and sends, as the stage executor does it
// (runtime/stage/forward_backward.cpp): a forward takes its input from the
// previous virtual stage and sends its output on; a fused backward or B
// takes the output gradient from the next and sends the input gradient
// back; W and the optimizer step communicate nothing point-to-point.
Traffic traffic_of(const Schedule& s, int d, const Action& a) {
  Traffic t;
  int v = s.virtual_stage(d, a.chunk), last = s.virtual_stages() - 1;
  if (a.kind == ActionKind::Forward) {
    if (v > 0 && s.device_of_virtual_stage(v - 1) != d) {
      t.needs = MessageId{MessageDir::Activation, a.microbatch, v};
      t.from = s.device_of_virtual_stage(v - 1);
    }
    if (v < last && s.device_of_virtual_stage(v + 1) != d) {
      t.makes = MessageId{MessageDir::Activation, a.microbatch, v + 1};
      t.to = s.device_of_virtual_stage(v + 1);
    }
  } else if (a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardInput) {
    if (v < last && s.device_of_virtual_stage(v + 1) != d) {
      t.needs = MessageId{MessageDir::Gradient, a.microbatch, v};
      t.from = s.device_of_virtual_stage(v + 1);
    }
    if (v > 0 && s.device_of_virtual_stage(v - 1) != d) {
      t.makes = MessageId{MessageDir::Gradient, a.microbatch, v - 1};
      t.to = s.device_of_virtual_stage(v - 1);
    }
  }
  return t;
}

bool skipped(const Action& a, std::int64_t limit) { return limit >= 0 && a.microbatch >= limit; }

// The next action index >= i on device d that is not skipped.
std::int64_t next_kept(const Schedule& s, int d, std::int64_t i, std::int64_t limit) {
  while (i < s.length(d) && skipped(s.action(d, i), limit)) ++i;
  return i;
}

}  // namespace

std::string to_string(const MessageId& m) {
  return std::string(m.dir == MessageDir::Activation ? "activation" : "gradient") + "(mb " +
         std::to_string(m.microbatch) + ", vstage " + std::to_string(m.vstage) + ")";
}

CommOrder comm_order(const Schedule& s, std::int64_t limit) {
  const int p = s.devices();
  // Lock-step run: in each round every device whose next action has its
  // input (produced in an earlier round) runs it. The position of an
  // action in this serialization numbers the message it produces.
  std::vector<std::int64_t> next(p);
  for (int d = 0; d < p; ++d) next[d] = next_kept(s, d, 0, limit);
  std::map<std::tuple<int, int, int>, std::int64_t> produced;  // message -> producer's position
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> runs(p);  // per device: (action index, position)
  std::int64_t position = 0;
  for (;;) {
    bool all_done = true, progress = false;
    std::vector<std::pair<MessageId, std::int64_t>> made;  // visible from the next round
    for (int d = 0; d < p; ++d) {
      if (next[d] >= s.length(d)) continue;
      all_done = false;
      Action a = s.action(d, next[d]);
      Traffic t = traffic_of(s, d, a);
      if (t.needs && !produced.count(key(*t.needs))) continue;
      runs[d].push_back({next[d], position});
      if (t.makes) made.push_back({*t.makes, position});
      ++position;
      next[d] = next_kept(s, d, next[d] + 1, limit);
      progress = true;
    }
    if (all_done) break;
    if (!progress) throw std::logic_error("comm_order: the " + to_string(s.kind()) + " schedule cannot run");
    for (auto& [m, pos] : made) produced[key(m)] = pos;
  }

  CommOrder order;
  order.devices.resize(p);
  for (int d = 0; d < p; ++d) {
    std::vector<std::pair<std::int64_t, CommOp>> ops;  // (message number, op)
    for (auto [index, pos] : runs[d]) {
      Traffic t = traffic_of(s, d, s.action(d, index));
      if (t.needs) ops.push_back({produced.at(key(*t.needs)), CommOp{false, t.from, *t.needs}});
      if (t.makes) ops.push_back({pos, CommOp{true, t.to, *t.makes}});
    }
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    // An op numbered n goes right before the device's first action placed
    // after n: sends straight after the action that made them, receives
    // as late as the global order allows.
    size_t r = 0;
    for (auto& [n, op] : ops) {
      while (r < runs[d].size() && runs[d][r].second <= n) ++r;
      std::int64_t before = r < runs[d].size() ? runs[d][r].first : s.length(d);
      auto& steps = order.devices[d];
      if (steps.empty() || steps.back().before_action != before) steps.push_back(CommStep{before, {}});
      steps.back().ops.push_back(op);
    }
  }
  return order;
}

std::string check_comm_order(const Schedule& s, const CommOrder& order, std::int64_t limit) {
  const int p = s.devices();
  if (static_cast<int>(order.devices.size()) != p)
    return "the order has " + std::to_string(order.devices.size()) + " devices, the schedule " + std::to_string(p);
  struct Posted {
    MessageId msg;
    bool send = false;
    bool matched = false;
  };
  // Per directed pair (from, to): posted sends and receives, in order.
  std::map<std::pair<int, int>, std::deque<Posted*>> sends, recvs;
  std::vector<std::deque<Posted>> storage(p);
  struct Device {
    std::int64_t action = 0;     // next action index
    size_t step = 0;             // next step
    std::vector<Posted*> group;  // the posted group, until complete
    std::set<std::tuple<int, int, int>> received, made, sent;
  };
  std::vector<Device> dev(p);
  for (int d = 0; d < p; ++d) dev[d].action = next_kept(s, d, 0, limit);

  auto match = [&](const std::pair<int, int>& pair) -> std::string {
    auto& sq = sends[pair];
    auto& rq = recvs[pair];
    while (!sq.empty() && !rq.empty()) {
      Posted* a = sq.front();
      Posted* b = rq.front();
      if (a->msg != b->msg)
        return "mismatch: device " + std::to_string(pair.first) + "'s send of " + to_string(a->msg) + " met device " +
               std::to_string(pair.second) + "'s receive expecting " + to_string(b->msg);
      a->matched = b->matched = true;
      dev[pair.second].received.insert(key(b->msg));
      sq.pop_front();
      rq.pop_front();
    }
    return {};
  };

  for (;;) {
    bool progress = false, all_done = true;
    for (int d = 0; d < p; ++d) {
      Device& D = dev[d];
      for (;;) {
        if (!D.group.empty()) {
          if (!std::all_of(D.group.begin(), D.group.end(), [](Posted* x) { return x->matched; })) break;
          D.group.clear();
          progress = true;
        }
        const auto& steps = order.devices[d];
        if (D.step < steps.size() && steps[D.step].before_action <= D.action) {
          if (steps[D.step].before_action < D.action)
            return "device " + std::to_string(d) + ": step " + std::to_string(D.step) + " is placed before action " +
                   std::to_string(steps[D.step].before_action) + ", which already ran";
          for (const CommOp& op : steps[D.step].ops) {
            if (op.peer == d || op.peer < 0 || op.peer >= p)
              return "device " + std::to_string(d) + ": an operation names peer " + std::to_string(op.peer);
            if (op.send && !D.made.count(key(op.msg)))
              return "device " + std::to_string(d) + " sends " + to_string(op.msg) + " before producing it";
            if (op.send) D.sent.insert(key(op.msg));
            storage[d].push_back(Posted{op.msg, op.send});
            Posted* x = &storage[d].back();
            D.group.push_back(x);
            auto pair = op.send ? std::make_pair(d, op.peer) : std::make_pair(op.peer, d);
            (op.send ? sends : recvs)[pair].push_back(x);
            if (std::string e = match(pair); !e.empty()) return e;
          }
          ++D.step;
          progress = true;
          continue;
        }
        if (D.action >= s.length(d)) break;
        Action a = s.action(d, D.action);
        Traffic t = traffic_of(s, d, a);
        if (t.needs && !D.received.count(key(*t.needs)))
          return "device " + std::to_string(d) + " runs action " + std::to_string(D.action) + " needing " +
                 to_string(*t.needs) + " that it has not received";
        if (t.makes) D.made.insert(key(*t.makes));
        D.action = next_kept(s, d, D.action + 1, limit);
        progress = true;
      }
      if (!D.group.empty() || D.step < order.devices[d].size() || D.action < s.length(d)) all_done = false;
    }
    if (all_done) break;
    if (!progress) {
      std::string why = "deadlock:";
      for (int d = 0; d < p; ++d) {
        for (Posted* x : dev[d].group)
          if (!x->matched)
            why += " device " + std::to_string(d) + " waits on its " + (x->send ? "send of " : "receive of ") +
                   to_string(x->msg) + ";";
      }
      return why;
    }
  }
  for (auto& [pair, q] : sends)
    if (!q.empty()) return "device " + std::to_string(pair.first) + "'s send of " + to_string(q.front()->msg) + " to device " + std::to_string(pair.second) + " is never received";
  for (auto& [pair, q] : recvs)
    if (!q.empty()) return "device " + std::to_string(pair.second) + "'s receive of " + to_string(q.front()->msg) + " is never sent";
  for (int d = 0; d < p; ++d)
    for (const auto& [dir, mb, v] : dev[d].made)
      if (!dev[d].sent.count({dir, mb, v}))
        return "device " + std::to_string(d) + " never sends " +
               to_string(MessageId{static_cast<MessageDir>(dir), mb, v}) + ", which it produced";
  return {};
}

}  // namespace pw

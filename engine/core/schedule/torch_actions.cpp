#include "core/schedule/torch_actions.h"

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace pw {
namespace {

char type_letter(ActionKind k) {
  switch (k) {
    case ActionKind::Forward: return 'F';
    case ActionKind::BackwardInput: return 'I';
    case ActionKind::BackwardWeight: return 'W';
    case ActionKind::Backward: return 'B';
    case ActionKind::OptimizerStep: break;
  }
  return '?';
}

}  // namespace

std::string torch_schedule_csv(const Schedule& s) {
  if (!s.flushes())
    throw std::invalid_argument(to_string(s.kind()) + " has no flush: PyTorch's schedules step once per iteration");
  std::string out;
  for (int d = 0; d < s.devices(); ++d) {
    bool first = true;
    for (std::int64_t i = 0; i < s.length(d); ++i) {
      Action a = s.action(d, i);
      if (a.kind == ActionKind::OptimizerStep) continue;
      if (!first) out += ',';
      first = false;
      out += std::to_string(s.virtual_stage(d, a.chunk)) + type_letter(a.kind) + std::to_string(a.microbatch);
    }
    out += "\r\n";  // Python's csv.writer ends rows with \r\n
  }
  return out;
}

std::vector<std::vector<Action>> parse_torch_schedule_csv(const std::string& csv, const Schedule& s) {
  std::vector<std::vector<Action>> order;
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const int d = static_cast<int>(order.size());
    const std::string where = "row " + std::to_string(d + 1);
    if (d >= s.devices()) throw std::invalid_argument(where + ": more rows than the schedule's " + std::to_string(s.devices()) + " ranks");
    order.emplace_back();
    std::istringstream cells(line);
    std::string cell;
    int col = 0;
    while (std::getline(cells, cell, ',')) {
      ++col;
      const std::string at = where + ", cell " + std::to_string(col) + " \"" + cell + "\"";
      if (cell.empty()) continue;  // an idle step (None in PyTorch)
      size_t i = 0;
      while (i < cell.size() && std::isdigit(static_cast<unsigned char>(cell[i]))) ++i;
      if (i == 0 || i + 1 >= cell.size()) throw std::invalid_argument(at + ": not {stage}{F|I|W|B}{microbatch}");
      const char t = cell[i];
      const std::string mb = cell.substr(i + 1);
      if (mb.find_first_not_of("0123456789") != std::string::npos || mb.size() > 9)
        throw std::invalid_argument(at + ": the microbatch is not a number");
      ActionKind k;
      if (t == 'F') k = ActionKind::Forward;
      else if (t == 'I') k = ActionKind::BackwardInput;
      else if (t == 'W') k = ActionKind::BackwardWeight;
      else if (t == 'B') k = ActionKind::Backward;
      else throw std::invalid_argument(at + ": type must be F, I, W or B");
      if (i > 6) throw std::invalid_argument(at + ": stage index out of range");
      const int vs = std::stoi(cell.substr(0, i)), m = std::stoi(mb);
      if (vs >= s.virtual_stages() || s.device_of_virtual_stage(vs) != d)
        throw std::invalid_argument(at + ": stage " + std::to_string(vs) + " is not on rank " + std::to_string(d));
      if (m >= s.microbatches()) throw std::invalid_argument(at + ": microbatch past the schedule's " + std::to_string(s.microbatches()));
      order.back().push_back({k, static_cast<std::uint16_t>(s.chunk_of_virtual_stage(vs)), m});
    }
    order.back().push_back({ActionKind::OptimizerStep, 0, -1});
  }
  if (static_cast<int>(order.size()) != s.devices())
    throw std::invalid_argument("the CSV has " + std::to_string(order.size()) + " rows, the schedule " +
                                std::to_string(s.devices()) + " ranks");
  return order;
}

}  // namespace pw

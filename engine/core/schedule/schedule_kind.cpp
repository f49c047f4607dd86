#include "core/schedule/schedule_kind.h"

namespace pw {
namespace {
struct Name {
  ScheduleKind kind;
  const char* name;
};
constexpr Name kNames[] = {{ScheduleKind::GPipe, "gpipe"},
                           {ScheduleKind::OneFOneB, "1f1b"},
                           {ScheduleKind::PipeDream, "pipedream"},
                           {ScheduleKind::Interleaved, "interleaved"},
                           {ScheduleKind::CSP, "csp"},
                           {ScheduleKind::ZBH1, "zb-h1"},
                           {ScheduleKind::ZBH2, "zb-h2"},
                           {ScheduleKind::ZBV, "zb-v"},
                           {ScheduleKind::DualPipeV, "dualpipe-v"},
                           {ScheduleKind::VHalf, "v-half"},
                           {ScheduleKind::VMin, "v-min"},
                           {ScheduleKind::Generated, "generated"}};
}  // namespace

bool is_v_shape(ScheduleKind k) {
  return k == ScheduleKind::ZBV || k == ScheduleKind::DualPipeV || k == ScheduleKind::VHalf || k == ScheduleKind::VMin;
}

bool flushes(ScheduleKind k) { return k != ScheduleKind::PipeDream; }

bool splits_backward(ScheduleKind k) {
  return k == ScheduleKind::ZBH1 || k == ScheduleKind::ZBH2 || k == ScheduleKind::ZBV || k == ScheduleKind::DualPipeV ||
         k == ScheduleKind::VHalf || k == ScheduleKind::VMin || k == ScheduleKind::Generated;
}

std::string to_string(ScheduleKind k) {
  for (const auto& n : kNames)
    if (n.kind == k) return n.name;
  return "?";
}

std::optional<ScheduleKind> schedule_kind_from_string(const std::string& s) {
  for (const auto& n : kNames)
    if (s == n.name) return n.kind;
  return std::nullopt;
}

std::vector<std::string> schedule_kind_names() {
  std::vector<std::string> v;
  for (const auto& n : kNames) v.push_back(n.name);
  return v;
}

}  // namespace pw

#pragma once
#include <QWidget>
#include <cstdint>
#include <vector>

#include "core/events/event.h"

class QHBoxLayout;

namespace pw::gui {

class RunModel;

// The timeline's legend: a swatch and the name of every event kind the run
// holds, grouped by the lane core's classification puts it in
// (core/events/event_kinds.h lane_of: compute, copy, link, collective). The
// kinds are core's (0..kEventKindCount), so a kind added there is listed
// without a change here; only its colour (theme.cpp kind_color) is the
// studio's.
class KindLegend : public QWidget {
  Q_OBJECT
 public:
  explicit KindLegend(QWidget* parent = nullptr);
  void setRun(const RunModel* run);
  // The kinds listed now, in the order shown.
  const std::vector<EventKind>& kinds() const { return shown_; }
  // Every kind the timeline can draw (all of core's but Idle, which is not
  // an event of the timeline's), in the legend's order: by lane, then kind.
  static std::vector<EventKind> drawable_kinds();

 private:
  void refresh();
  const RunModel* run_ = nullptr;
  std::uint32_t shown_mask_ = ~0u;
  std::vector<EventKind> shown_;
  QHBoxLayout* lay_;
};

}  // namespace pw::gui

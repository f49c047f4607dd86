#include "gui/models/run_export.h"

#include "core/trace/chrome_trace.h"
#include "gui/models/run_model.h"

namespace pw::gui {
namespace {

template <class F>
void for_each_event(const RunModel& run, F&& f) {
  for (int s = 0; s < run.stageCount(); ++s)
    for (int r = 0; r < kTrackRowCount; ++r) {
      const EventTrack& t = run.track(s, static_cast<TrackRow>(r));
      for (std::size_t i = 0; i < t.size(); ++i) {
        Event e = t.event(i);
        e.stage = s;
        f(e);
      }
    }
}

}  // namespace

std::vector<Event> snapshot_events(const RunModel& run) {
  std::vector<Event> events;
  events.reserve(run.eventCount());
  for_each_event(run, [&](const Event& e) { events.push_back(e); });
  return events;
}

void export_chrome_trace(const RunModel& run, std::ostream& out) {
  ChromeTraceWriter w(out, run.stageCount(), run.info().name.empty() ? "pipewright run" : run.info().name);
  for_each_event(run, [&](const Event& e) { w.on_event(e); });
  for (int s = 0; s < run.stageCount(); ++s)
    for (const auto& m : run.memory(s)) w.on_memory(s, m.t_ns, m.bytes);
  w.finish();
}

void export_events_csv(const RunModel& run, std::ostream& out) {
  out << "start_ns,end_ns,stage,kind,microbatch,chunk,first_layer,last_layer,bytes\n";
  for_each_event(run, [&](const Event& e) {
    out << e.start_ns << ',' << e.end_ns << ',' << e.stage << ',' << to_string(e.kind) << ',' << e.microbatch << ','
        << e.chunk << ',' << e.first_layer << ',' << e.last_layer << ',' << e.bytes << '\n';
  });
}

}  // namespace pw::gui

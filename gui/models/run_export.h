#pragma once
#include <ostream>
#include <vector>

#include "core/events/event.h"

namespace pw::gui {

class RunModel;

// A copy of every event of the run (every stage and row, stage set).
std::vector<Event> snapshot_events(const RunModel& run);
// A run's events (and memory counters) as a Chrome / Perfetto trace, via
// pw_core's ChromeTraceWriter.
void export_chrome_trace(const RunModel& run, std::ostream& out);
// One line per event: start_ns,end_ns,stage,kind,microbatch,chunk,first_layer,last_layer,bytes.
void export_events_csv(const RunModel& run, std::ostream& out);

}  // namespace pw::gui

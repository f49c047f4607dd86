#pragma once
#include <ostream>

namespace pw::gui {

class RunModel;

// A run's events (and memory counters) as a Chrome / Perfetto trace, via
// pw_core's ChromeTraceWriter.
void export_chrome_trace(const RunModel& run, std::ostream& out);
// One line per event: start_ns,end_ns,stage,kind,microbatch,chunk,first_layer,last_layer,bytes.
void export_events_csv(const RunModel& run, std::ostream& out);

}  // namespace pw::gui

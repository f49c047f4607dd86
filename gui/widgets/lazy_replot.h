#pragma once

class QCustomPlot;

namespace pw::gui {

// Replots `plot` (queued, coalesced) when it is visible. A hidden one (a
// dock tabbed behind another, the Compare tab while the Monitor shows) is
// only marked stale and replots once it is shown: a live run's ticks then
// cost nothing for views nobody sees. For per-tick data updates; exports
// and tests that render explicitly are unaffected (they draw afresh).
void replot_when_visible(QCustomPlot* plot);

}  // namespace pw::gui

#pragma once

namespace pw::bench {
// Generated orders (issue 28) against the hand-built ones and 1F1B.
void generated_orders();
}  // namespace pw::bench

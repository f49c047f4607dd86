#pragma once

namespace pw::bench {

// Issue 43's grid: the generated schedule against the best hand-built
// order that fits the same memory cap (zero_bubble_grid.cpp).
void generated_grid();

}  // namespace pw::bench

#pragma once

namespace pw::rt {

// Keeps glibc malloc from handing freed tensor buffers back to the kernel.
// libtorch's CPU allocator is plain malloc/free; with glibc's defaults a
// freed im2col or activation buffer above the trim/mmap thresholds is
// returned to the OS and faulted in again, page by page, on the next
// microbatch. On the demo CNN that made conv0's forward 17 ms instead of
// 2 ms, and whether a process landed in that regime depended on its
// allocation history (the profiler did, the workers mostly did not), so
// measured profiles disagreed with runs. Every process that trains or
// measures calls this first, so they all run in the same regime.
void tune_host_allocator();

}  // namespace pw::rt

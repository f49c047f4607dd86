#include "runtime/host_allocator.h"

#include <malloc.h>

namespace pw::rt {

void tune_host_allocator() {
#if defined(__GLIBC__)
  // 32 MiB is glibc's largest mmap threshold: smaller buffers come from the
  // heap and are reused. Trimming only above 1 GiB of free heap top keeps
  // the reused pages mapped; the stage's memory budget is accounted per
  // tensor (memory.h), not by resident size, so this changes no budget.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace pw::rt

// CUDA events as a DeviceClock's timer (event_clock.h). Compiled only with
// a CUDA libtorch (PW_WITH_CUDA).
//
// API (verified against pytorch's aten/src/ATen/cuda/CUDAEvent.h, 1.13 and
// 2.x): at::cuda::CUDAEvent(unsigned flags) creates the event lazily on its
// first record(const CUDAStream&); the default flags are
// cudaEventDisableTiming, so timing needs cudaEventDefault; synchronize()
// is cudaEventSynchronize; a.elapsed_time(b) is cudaEventElapsedTime(a, b),
// in ms, b after a. c10::Event gained elapsedTime only in late 2.x and 1.13
// has none, so the generic event API cannot do this.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include <deque>

#include "runtime/cuda/cuda_backends.h"

namespace pw::rt::cuda {
namespace {

class CudaTimer final : public DeviceTimer {
 public:
  explicit CudaTimer(c10::DeviceIndex index) : index_(index) {}
  void record(std::size_t slot) override {
    while (events_.size() <= slot) events_.emplace_back(cudaEventDefault);
    // The stream the stage's kernels are queued on now, so a mark sits
    // between the work before it and the work after it.
    events_[slot].record(c10::cuda::getCurrentCUDAStream(index_));
  }
  void synchronize(std::size_t slot) override { events_.at(slot).synchronize(); }
  double elapsed_ms(std::size_t from, std::size_t to) const override {
    return events_.at(from).elapsed_time(events_.at(to));
  }

 private:
  c10::DeviceIndex index_;
  std::deque<at::cuda::CUDAEvent> events_;  // a deque: events are reused in place, never moved
};

}  // namespace

std::unique_ptr<DeviceTimer> make_timer(c10::DeviceIndex index) { return std::make_unique<CudaTimer>(index); }

}  // namespace pw::rt::cuda

#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pw::rt {

// The `swap` memory policy: a layer's forward runs with autograd as under
// `keep`, but every tensor autograd saves for its backward is captured
// (saved-tensor hooks) and, after the forward, copied to a host pool and
// dropped from the device; before the backward it is copied back. The
// backward then runs on the very graph the forward built: no recompute,
// only transfers, which is what the cost model and the simulator price.
//
// Saved tensors are grouped by storage, so views of one buffer (a weight's
// transpose, an activation saved by two ops) travel once and come back as
// views of one buffer again. Weights and buffers stay resident.
//
// libtorch 1.13 exposes saved-tensor default hooks only to Python; in C++
// they come from the autograd engine (`get_default_saved_variable_hooks`),
// so the first SwappedActivations installs an engine that asks the capture
// active on the current thread, and otherwise behaves as the default one.
class SwappedActivations {
 public:
  SwappedActivations();
  ~SwappedActivations();
  SwappedActivations(const SwappedActivations&) = delete;
  SwappedActivations& operator=(const SwappedActivations&) = delete;

  // While alive, tensors autograd saves on this thread are recorded into
  // `into`, except those whose storage belongs to `resident` (the layer's
  // parameters and buffers).
  class Capture {
   public:
    Capture(SwappedActivations& into, const std::vector<at::Tensor>& resident);
    ~Capture();
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;

   private:
    SwappedActivations* previous_;
  };

  // The layer's input leaf (its .grad() is read after the backward): its
  // data leaves the device with the saved tensors and comes back with them.
  void track_leaf(const at::Tensor& leaf);

  // Copies every captured storage to the host pool and drops the device's
  // references; returns the bytes moved. On CUDA the copies are queued on
  // the device's copy stream after the forward's kernels, into pinned
  // buffers, and the call returns at once: they overlap the next compute.
  std::int64_t swap_out();
  // Copies them back into fresh device buffers; returns the bytes moved.
  // On CUDA, on the copy stream again; the compute stream waits for their
  // event, so the backward queued next reads them, and nothing else does.
  std::int64_t swap_in();
  bool swapped_out() const { return out_; }

  struct Block;
  struct View;
  // Called by the hooks (activation_swap.cpp).
  std::shared_ptr<View> record(const at::Tensor& saved);
  bool is_resident(const at::Tensor& saved) const;
  static SwappedActivations* active();

 private:
  std::shared_ptr<Block> block_of(const c10::Storage& storage);

  std::unordered_map<const c10::StorageImpl*, std::shared_ptr<Block>> blocks_;
  std::unordered_set<const c10::StorageImpl*> resident_;
  at::Tensor leaf_;
  std::shared_ptr<View> leaf_view_;
  bool out_ = false;
};

}  // namespace pw::rt

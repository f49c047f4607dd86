#include "runtime/activation_swap.h"

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <optional>

namespace pw::rt {

// One storage the layer's saved tensors live in: on the device until the
// swap-out, in the host pool until the swap-in.
struct SwappedActivations::Block {
  c10::Storage device;
  at::Tensor host;  // bytes; malloc'd, so outside the device's counting allocator
  std::int64_t nbytes = 0;
  c10::Device where = c10::Device(c10::kCPU);
};

// How a saved tensor sits in its block.
struct SwappedActivations::View {
  std::shared_ptr<Block> block;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  at::ScalarType dtype = at::kFloat;

  at::Tensor materialise() const {
    return at::empty({0}, at::TensorOptions().dtype(dtype).device(block->where))
        .set_(block->device, offset, sizes, strides);
  }
};

namespace {

thread_local SwappedActivations* g_capture = nullptr;

class SwapHooks final : public torch::autograd::SavedVariableHooks {
 public:
  explicit SwapHooks(SwappedActivations* owner) : owner_(owner) {}
  void call_pack_hook(const at::Tensor& t) override {
    // tensor_data(): the same storage without autograd metadata, so an
    // output saved by its own grad_fn does not keep that node alive.
    if (!t.has_storage() || owner_->is_resident(t))
      resident_ = t.tensor_data();
    else
      view_ = owner_->record(t);
  }
  at::Tensor call_unpack_hook() override {
    if (resident_.defined()) return resident_;
    if (!view_->block->device) throw std::logic_error("swapped activation used before its swap-in");
    return view_->materialise();
  }

 private:
  SwappedActivations* owner_;
  at::Tensor resident_;
  std::shared_ptr<SwappedActivations::View> view_;
};

class SwapAwareEngine final : public torch::autograd::Engine {
 public:
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    if (auto* c = SwappedActivations::active()) return std::make_unique<SwapHooks>(c);
    return nullptr;
  }
};

torch::autograd::Engine& swap_aware_engine() {
  static SwapAwareEngine engine;
  return engine;
}

void install_engine() {
  static std::once_flag once;
  std::call_once(once, [] { torch::autograd::set_default_engine_stub(&swap_aware_engine); });
}

at::Tensor host_bytes(std::int64_t n, c10::Device from) {
  if (from.is_cuda())  // pinned, so the copies can be asynchronous
    return at::empty({n}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  void* p = std::malloc(std::max<std::int64_t>(1, n));
  if (!p) throw std::bad_alloc();
  return at::from_blob(p, {n}, [](void* q) { std::free(q); }, at::TensorOptions().dtype(at::kByte));
}

at::Tensor bytes_of(const c10::Storage& s, std::int64_t n, c10::Device d) {
  return at::empty({0}, at::TensorOptions().dtype(at::kByte).device(d)).set_(s, 0, {n}, {1});
}

// The streams of an accelerator (CUDA) through c10's device-generic guard,
// so this compiles against a CPU-only libtorch too; a CPU device never
// gets here (its copies are synchronous and need no ordering).
//
// One copy stream per device for the process: swaps queue behind each
// other there (a swap-in after its own swap-out, with no event needed) and
// beside the compute stream, which is whatever stream is current when the
// stage queues its kernels.
struct Streams {
  c10::impl::VirtualGuardImpl guard;
  c10::Stream compute, copy;
  explicit Streams(c10::Device d)
      : guard(d.type()), compute(guard.getStream(d)), copy(copy_stream(guard, d)) {}

  static c10::Stream copy_stream(const c10::impl::VirtualGuardImpl& g, c10::Device d) {
    static std::mutex m;
    static std::map<std::pair<int, int>, c10::Stream> streams;
    std::lock_guard<std::mutex> lock(m);
    auto key = std::make_pair(static_cast<int>(d.type()), static_cast<int>(d.index()));
    auto it = streams.find(key);
    if (it == streams.end()) it = streams.emplace(key, g.getStreamFromGlobalPool(d)).first;
    return it->second;
  }
  // `later` waits (on the device, not the host) for what `earlier` has queued so far.
  static void order(const c10::Stream& earlier, const c10::Stream& later) {
    c10::Event e(earlier.device_type());
    e.record(earlier);
    e.block(later);
  }
};

}  // namespace

SwappedActivations::SwappedActivations() { install_engine(); }
SwappedActivations::~SwappedActivations() = default;

SwappedActivations* SwappedActivations::active() { return g_capture; }

SwappedActivations::Capture::Capture(SwappedActivations& into, const std::vector<at::Tensor>& resident)
    : previous_(g_capture) {
  for (const auto& t : resident)
    if (t.has_storage()) into.resident_.insert(t.storage().unsafeGetStorageImpl());
  g_capture = &into;
}
SwappedActivations::Capture::~Capture() { g_capture = previous_; }

bool SwappedActivations::is_resident(const at::Tensor& t) const {
  return resident_.count(t.storage().unsafeGetStorageImpl()) > 0;
}

std::shared_ptr<SwappedActivations::Block> SwappedActivations::block_of(const c10::Storage& s) {
  auto& b = blocks_[s.unsafeGetStorageImpl()];
  if (!b) {
    b = std::make_shared<Block>();
    b->device = s;
    b->nbytes = static_cast<std::int64_t>(s.nbytes());
    b->where = s.device();
  }
  return b;
}

std::shared_ptr<SwappedActivations::View> SwappedActivations::record(const at::Tensor& t) {
  auto v = std::make_shared<View>();
  v->block = block_of(t.storage());
  v->sizes = t.sizes().vec();
  v->strides = t.strides().vec();
  v->offset = t.storage_offset();
  v->dtype = t.scalar_type();
  return v;
}

void SwappedActivations::track_leaf(const at::Tensor& leaf) {
  leaf_ = leaf;
  leaf_view_ = record(leaf);
}

std::int64_t SwappedActivations::swap_out() {
  std::int64_t moved = 0;
  std::optional<Streams> streams;
  for (auto& [key, b] : blocks_) {
    b->host = host_bytes(b->nbytes, b->where);
    if (b->where.is_cpu()) {
      b->host.copy_(bytes_of(b->device, b->nbytes, b->where));
    } else {
      if (!streams) {
        streams.emplace(b->where);
        // The copies read what the forward's kernels write.
        Streams::order(streams->compute, streams->copy);
      }
      c10::StreamGuard on_copy(streams->copy);
      // Pinned, asynchronous: the host caching allocator records the copy
      // stream on the pinned buffer, so its release waits for the copy.
      b->host.copy_(bytes_of(b->device, b->nbytes, b->where), /*non_blocking=*/true);
      // The device buffer was allocated on the compute stream: told of the
      // copy stream's use, the caching allocator reuses it only after the
      // copy, so dropping the reference below is safe.
      streams->guard.recordDataPtrOnStream(b->device.data_ptr(), streams->copy);
    }
    moved += b->nbytes;
  }
  for (auto& [key, b] : blocks_) b->device = c10::Storage();
  if (leaf_.defined()) leaf_.set_data(at::empty({0}, leaf_.options().requires_grad(false)));
  out_ = true;
  return moved;
}

std::int64_t SwappedActivations::swap_in() {
  if (!out_) return 0;
  std::int64_t moved = 0;
  std::optional<Streams> streams;
  for (auto& [key, b] : blocks_) {
    at::Tensor dev;
    if (b->where.is_cpu()) {
      dev = at::empty({b->nbytes}, at::TensorOptions().dtype(at::kByte).device(b->where));
      dev.copy_(b->host);
    } else {
      if (!streams) streams.emplace(b->where);
      // Allocated and filled on the copy stream (after this block's
      // swap-out there), so the copy waits for no compute; the backward
      // uses and frees it on the compute stream, which the allocator is
      // told of.
      c10::StreamGuard on_copy(streams->copy);
      dev = at::empty({b->nbytes}, at::TensorOptions().dtype(at::kByte).device(b->where));
      dev.copy_(b->host, /*non_blocking=*/true);
      streams->guard.recordDataPtrOnStream(dev.storage().data_ptr(), streams->compute);
    }
    b->device = dev.storage();
    b->host = at::Tensor();
    moved += b->nbytes;
  }
  // The backward queued after this returns reads the buffers.
  if (streams) Streams::order(streams->copy, streams->compute);
  // The leaf gets its data back so its gradient accumulates with its shape.
  if (leaf_.defined()) leaf_.set_data(leaf_view_->materialise());
  out_ = false;
  return moved;
}

}  // namespace pw::rt

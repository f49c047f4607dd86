// A microbatch's forward and backward passes, layer by layer under each
// layer's memory policy (keep, recompute, swap); the backward fused, or
// split into B (input gradient) and W (weight gradient).
#include "runtime/stage/stage_impl.h"

#include "runtime/layers.h"
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/utils.h>
#include <cmath>
#include <stdexcept>
#include <string>

namespace pw::rt {

using namespace stage_impl;

namespace {
// A swap moves one layer's saved tensors: its event names that layer, so
// explain and the studio say which layers of which microbatch went when.
Event swap_event(const ActiveSchedule& run, EventKind kind, int mb, int chunk, int layer, std::int64_t bytes) {
  Event e = run.event(kind, mb, chunk, bytes);
  e.first_layer = e.last_layer = layer;
  return e;
}
}  // namespace

void StageExecutor::Impl::forward(const ActiveSchedule& run, int mb, int chunk) {
  int v = run.virtual_stage(chunk);
  const auto& r = plan.stages[v];
  Batch batch;
  at::Tensor x;
  if (v == 0 || v == vstages - 1) {
    auto [it, k] = run.data_position(mb);
    batch = data.microbatch(it, k);
  }
  if (v == 0)
    x = batch.input;
  else
    x = messaging.take_recv(run, kActivation, mb, chunk);
  EventClock::Mark t0 = telemetry.mark();
  MicrobatchState& st = state[{mb, chunk}];
  st.layers.resize(r.size());
  st.stash = stash.for_forward(run, chunk, layers);
  for (int l = r.first_layer; l <= r.last_layer; ++l) {
    LayerState& ls = st.layers[l - r.first_layer];
    bool grad_in = !(v == 0 && l == r.first_layer);
    at::Tensor in = grad_in ? x.detach().requires_grad_(true) : x;
    MemoryPolicy pol = plan.policy[l];
    at::Tensor out;
    if (pol == MemoryPolicy::Keep) {
      out = WeightStash::layer_of(st, layers, l, r.first_layer)->forward(in);
      ls.in = in;
      ls.out = out;
    } else if (pol == MemoryPolicy::Recompute) {
      torch::NoGradGuard ng;
      out = WeightStash::layer_of(st, layers, l, r.first_layer)->forward(in);
      ls.in = in;
    } else {
      auto& layer = WeightStash::layer_of(st, layers, l, r.first_layer);
      ls.swap = std::make_unique<SwappedActivations>();
      {
        std::vector<at::Tensor> resident = layer->parameters();
        for (auto& b : layer->buffers()) resident.push_back(b);
        SwappedActivations::Capture capture(*ls.swap, resident);
        out = layer->forward(in);
      }
      if (grad_in) {
        ls.in = in;
        ls.swap->track_leaf(in);
      }
      ls.root = torch::autograd::impl::gradient_edge(out);
      EventClock::Mark s0 = telemetry.mark();
      // The host pool lives outside the device account (see memory.h).
      std::int64_t bytes = ls.swap->swap_out();
      telemetry.memory().add_host(bytes);
      telemetry.emit(swap_event(run, EventKind::SwapOut, mb, chunk, l, bytes), s0);
    }
    x = out;
  }
  if (v == vstages - 1) {
    at::Tensor logits = x.detach().requires_grad_(true);
    // Flush schedules accumulate the batch's gradient over microbatches;
    // PipeDream updates after every microbatch. A tensor-parallel head's
    // logits are this rank's vocabulary shard (vocab_cross_entropy.h).
    at::Tensor l = pipeline_loss(logits, batch.target, &tensors) / (run.async ? 1 : microbatches);
    l.backward();
    st.out_grad = logits.grad();
    losses.emplace_back(run.global_mb(mb), l.detach());
  }
  telemetry.emit(run.event(EventKind::Forward, mb, chunk), t0);
  if (v < vstages - 1) messaging.send(run, kActivation, mb, chunk, x.detach());
  telemetry.memory().check("forward");
}

MicrobatchState& StageExecutor::Impl::state_of(int mb, int chunk, const char* what) {
  auto it = state.find({mb, chunk});
  if (it == state.end())
    throw std::logic_error(std::string(what) + " of microbatch " + std::to_string(mb) + " before its forward");
  return it->second;
}

// The layer's output with its graph, for a backward: kept, recomputed
// now (the recompute policy), or swapped back in (its root edge).
torch::autograd::Edge StageExecutor::Impl::output_root(const ActiveSchedule& run, MicrobatchState& st, LayerState& ls,
                                                        int l, int first, int mb, int chunk) {
  if (ls.swap) {
    EventClock::Mark s0 = telemetry.mark();
    std::int64_t bytes = ls.swap->swap_in();
    telemetry.memory().add_host(-bytes);
    telemetry.emit(swap_event(run, EventKind::SwapIn, mb, chunk, l, bytes), s0);
    return ls.root;
  }
  if (!ls.out.defined()) {
    EventClock::Mark s0 = telemetry.mark();
    ls.out = WeightStash::layer_of(st, layers, l, first)->forward(ls.in);
    telemetry.emit(run.event(EventKind::Recompute, mb, chunk), s0);
  }
  return torch::autograd::impl::gradient_edge(ls.out);
}

void StageExecutor::Impl::release(LayerState& ls) {
  ls.out = at::Tensor();
  ls.in = at::Tensor();
  ls.root = torch::autograd::Edge();
  ls.swap.reset();
}

// The fused backward: input and weight gradients in one pass per layer.
void StageExecutor::Impl::backward(const ActiveSchedule& run, int mb, int chunk) {
  int v = run.virtual_stage(chunk);
  const auto& r = plan.stages[v];
  MicrobatchState& st = state_of(mb, chunk, "backward");
  at::Tensor g = v == vstages - 1 ? st.out_grad : messaging.take_recv(run, kGradient, mb, chunk);
  // The iteration's last backward of the chunk completes its gradients layer
  // by layer: each replica bucket is all-reduced as soon as it is whole.
  const bool syncs = replica_sync && replica_sync->begins_last_backward(chunk);
  EventClock::Mark t0 = telemetry.mark();
  for (int l = r.last_layer; l >= r.first_layer; --l) {
    LayerState& ls = st.layers[l - r.first_layer];
    bool grad_in = !(v == 0 && l == r.first_layer);
    torch::autograd::Edge root = output_root(run, st, ls, l, r.first_layer, mb, chunk);
    if (root.function)
      torch::autograd::Engine::get_default_engine().execute({root}, {g}, /*keep_graph=*/false,
                                                              /*create_graph=*/false, /*accumulate_grad=*/true);
    if (grad_in) g = ls.in.grad();
    release(ls);
    if (syncs) replica_sync->layer_done(run, chunk, l);
  }
  WeightStash::fold_gradients(st, r, layers);
  state.erase({mb, chunk});
  // The send is its own event: the cost model prices it apart, and
  // in-situ calibration reads backward events as compute alone.
  telemetry.emit(run.event(EventKind::Backward, mb, chunk), t0);
  if (v > 0) messaging.send(run, kGradient, mb, chunk, g);
  update_static();
  telemetry.memory().check("backward");
}

// B of a split backward: the gradient of the stage's input, layer by
// layer, sent upstream at once; every layer keeps its graph (and, under
// recompute or swap, the recomputed or swapped-in activations) for W.
void StageExecutor::Impl::backward_input(const ActiveSchedule& run, int mb, int chunk) {
  int v = run.virtual_stage(chunk);
  const auto& r = plan.stages[v];
  MicrobatchState& st = state_of(mb, chunk, "input gradient");
  if (st.input_gradient_done)
    throw std::logic_error("input gradient of microbatch " + std::to_string(mb) + " twice");
  at::Tensor g = v == vstages - 1 ? st.out_grad : messaging.take_recv(run, kGradient, mb, chunk);
  st.out_grad = at::Tensor();
  EventClock::Mark t0 = telemetry.mark();
  for (int l = r.last_layer; l >= r.first_layer; --l) {
    LayerState& ls = st.layers[l - r.first_layer];
    bool grad_in = !(v == 0 && l == r.first_layer);
    torch::autograd::Edge root = output_root(run, st, ls, l, r.first_layer, mb, chunk);
    auto weights = WeightStash::layer_of(st, layers, l, r.first_layer)->parameters();
    at::Tensor d_in = ls.split.input_gradient(root, g, grad_in ? ls.in : at::Tensor(), weights);
    if (grad_in) g = d_in;
  }
  st.input_gradient_done = true;
  telemetry.emit(run.event(EventKind::BackwardInput, mb, chunk), t0);
  if (v > 0) messaging.send(run, kGradient, mb, chunk, g);
  telemetry.memory().check("input gradient");
  offload_stash(run, st, mb, chunk);
}

// After B, each swapped layer's saved tensors (what its W reads: the graph
// B kept) go back to the host pool, as after the forward, unless this
// microbatch's W runs next (the round trip would only delay it). Each
// layer its own event, after B's, so B's time stays compute alone.
void StageExecutor::Impl::offload_stash(const ActiveSchedule& run, MicrobatchState& st, int mb, int chunk) {
  if (next_action && next_action->kind == ActionKind::BackwardWeight && next_action->microbatch == mb &&
      next_action->chunk == chunk)
    return;
  const auto& r = plan.stages[run.virtual_stage(chunk)];
  for (int l = r.last_layer; l >= r.first_layer; --l) {
    LayerState& ls = st.layers[l - r.first_layer];
    if (!ls.swap || ls.swap->swapped_out()) continue;
    EventClock::Mark s0 = telemetry.mark();
    std::int64_t bytes = ls.swap->swap_out();
    telemetry.memory().add_host(bytes);
    telemetry.emit(swap_event(run, EventKind::SwapOut, mb, chunk, l, bytes), s0);
  }
}

// Before W: the stash offload_stash sent out comes back (the unpack hooks
// find the saved tensors on the device again), before W's event starts.
void StageExecutor::Impl::reload_stash(const ActiveSchedule& run, MicrobatchState& st, int mb, int chunk) {
  const auto& r = plan.stages[run.virtual_stage(chunk)];
  for (int l = r.last_layer; l >= r.first_layer; --l) {
    LayerState& ls = st.layers[l - r.first_layer];
    if (!ls.swap || !ls.swap->swapped_out()) continue;
    EventClock::Mark s0 = telemetry.mark();
    std::int64_t bytes = ls.swap->swap_in();
    telemetry.memory().add_host(-bytes);
    telemetry.emit(swap_event(run, EventKind::SwapIn, mb, chunk, l, bytes), s0);
  }
}

// W of a split backward: the weight gradients accumulate into .grad as
// the fused backward would have; the graph and what B kept go.
void StageExecutor::Impl::backward_weight(const ActiveSchedule& run, int mb, int chunk) {
  int v = run.virtual_stage(chunk);
  const auto& r = plan.stages[v];
  MicrobatchState& st = state_of(mb, chunk, "weight gradient");
  if (!st.input_gradient_done)
    throw std::logic_error("weight gradient of microbatch " + std::to_string(mb) + " before its input gradient");
  // As in the fused backward: the last W of the chunk completes its gradients.
  const bool syncs = replica_sync && replica_sync->begins_last_backward(chunk);
  reload_stash(run, st, mb, chunk);
  EventClock::Mark t0 = telemetry.mark();
  for (int l = r.last_layer; l >= r.first_layer; --l) {
    LayerState& ls = st.layers[l - r.first_layer];
    ls.split.weight_gradient();
    release(ls);
    if (syncs) replica_sync->layer_done(run, chunk, l);
  }
  WeightStash::fold_gradients(st, r, layers);
  state.erase({mb, chunk});
  telemetry.emit(run.event(EventKind::BackwardWeight, mb, chunk), t0);
  update_static();
  telemetry.memory().check("weight gradient");
}

}  // namespace pw::rt

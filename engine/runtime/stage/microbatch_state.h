#pragma once
// What the stage keeps of a microbatch between its forward and its
// backward; the forward/backward passes fill and drain it, the weight
// stash says which weights it ran with.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/activation_swap.h"
#include "runtime/split_backward.h"

namespace pw::rt::stage_impl {

// What a layer keeps between its forward and backward for one microbatch.
struct LayerState {
  at::Tensor in;   // the layer's input (a leaf when gradients flow upstream)
  at::Tensor out;  // Keep: the output with its autograd graph
  // Swap: the graph's root without its output tensor (which the next layer
  // holds as its input, or a send), and the saved tensors, off the device.
  torch::autograd::Edge root;
  std::unique_ptr<SwappedActivations> swap;
  // Split backward: what B keeps for W (the graph stays with `out`/`root`).
  SplitBackward split;
};

// Weight stashing (PipeDream): the weight version a microbatch's forward
// used, kept for its backward while the live weights move on.
struct Stash {
  std::vector<torch::nn::Sequential> layers;  // indexed from the virtual stage's first layer
  std::int64_t bytes = 0;
};

struct MicrobatchState {
  std::vector<LayerState> layers;  // indexed from the virtual stage's first layer
  at::Tensor out_grad;             // last virtual stage: dLoss/dOutput
  std::shared_ptr<Stash> stash;    // async schedules on stages with > 1 weight version
  bool input_gradient_done = false;  // split backward: B ran, W pending
};

using MicrobatchStates = std::map<std::pair<int, int>, MicrobatchState>;  // (microbatch, chunk)

}  // namespace pw::rt::stage_impl

#pragma once
#include <ATen/Tensor.h>
#include <torch/csrc/autograd/edge.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pw::rt {

// One layer segment's backward split in two, as zero-bubble schedules run
// it: B (input_gradient) computes the gradient of the segment's input only
// and keeps the graph; W (weight_gradient), any time later, accumulates the
// gradients of the layer's parameters into their .grad and lets the graph go.
//
// B would otherwise leave W to redo the whole chain inside the layer (for a
// transformer block, most of the input-gradient matmuls again). Instead, as
// torch.distributed.pipelining does, B records the gradient arriving at each
// "intermediate": a node that carries gradient both towards the input and,
// through nodes that do not, to a parameter (an addmm, a layer norm). W
// starts from those recorded gradients and runs only the weight branches, so
// each node computes exactly what the fused backward computes there: the
// same numbers, bit for bit, only in two passes.
//
// Where that split is not sound (a parameter also reachable below another
// of its intermediates, a weight used twice along the input path, or more
// than 64 parameters), W falls back to a second pass from the segment's
// output with the kept output gradient: slower, the same numbers.
// A segment without an input gradient (the model's first layer) does all
// its work in W.
class SplitBackward {
 public:
  SplitBackward();
  ~SplitBackward();
  SplitBackward(SplitBackward&&) noexcept;
  SplitBackward& operator=(SplitBackward&&) noexcept;

  // B: `root` is the segment output's gradient edge, `grad_out` the gradient
  // of that output, `input` the segment's input leaf (undefined where no
  // gradient flows upstream), `params` the layer's parameters. Returns
  // d(input), undefined when `input` is.
  at::Tensor input_gradient(const torch::autograd::Edge& root, const at::Tensor& grad_out, const at::Tensor& input,
                            const std::vector<at::Tensor>& params);
  // W: accumulates the parameters' gradients and releases the graph and
  // everything B kept for W. Throws if B has not run.
  void weight_gradient();

  // Bytes of the gradients B keeps for W (the graph's saved tensors are
  // counted where they live, by the device account).
  std::int64_t held_bytes() const;
  // True when W must replay the segment from its output (see above).
  bool replays_segment() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace pw::rt

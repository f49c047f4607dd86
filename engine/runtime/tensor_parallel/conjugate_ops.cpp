// f and g over the tensor group (conjugate_ops.h).
#include "runtime/tensor_parallel/conjugate_ops.h"

#include <torch/autograd.h>

#include "core/events/clock.h"

namespace pw::rt {

// Into a fresh tensor: autograd still holds `x` (an input of this op or a
// gradient another node may read), so the transport's in-place reduction
// must not touch it.
at::Tensor tensor_group_allreduce(const at::Tensor& x, const TensorSet& set, c10d::ReduceOp op, bool backward) {
  TensorCommLog::Span span;
  span.backward = backward;
  span.bytes = static_cast<std::int64_t>(x.numel() * x.element_size());
  span.start_ns = steady_now_ns();
  std::vector<at::Tensor> buf{to_wire(x.detach().clone(at::MemoryFormat::Contiguous), set.placement)};
  c10d::AllreduceOptions options;
  options.reduceOp = op;
  set.group->allreduce(buf, options)->wait();
  at::Tensor out = from_wire(buf[0], set.placement);
  span.end_ns = steady_now_ns();
  if (set.log) set.log->add(span);
  return out;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor allreduce_sum(const at::Tensor& x, const TensorSet& set, bool backward) {
  return tensor_group_allreduce(x, set, c10d::ReduceOp::SUM, backward);
}

// The set travels to the backward as its address: the module holding it
// outlives every graph it builds (a stashed weight version included).
const TensorSet& set_of(AutogradContext* ctx) {
  return *reinterpret_cast<const TensorSet*>(ctx->saved_data["set"].toInt());
}

struct CopyToGroup : torch::autograd::Function<CopyToGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const TensorSet* set) {
    ctx->saved_data["set"] = reinterpret_cast<std::int64_t>(set);
    return x;  // autograd makes the returned input a view of it
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {allreduce_sum(grads[0], set_of(ctx), /*backward=*/true), at::Tensor()};
  }
};

struct ReduceFromGroup : torch::autograd::Function<ReduceFromGroup> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& x, const TensorSet* set) {
    return allreduce_sum(x, *set, /*backward=*/false);
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], at::Tensor()}; }
};

}  // namespace

at::Tensor copy_to_tensor_group(const at::Tensor& x, const TensorSet& set) {
  if (set.count < 2) return x;
  return CopyToGroup::apply(x, &set);
}

at::Tensor reduce_from_tensor_group(const at::Tensor& x, const TensorSet& set) {
  if (set.count < 2) return x;
  // Without autograd (a recompute's first pass, evaluation) the sum alone.
  if (!x.requires_grad()) return allreduce_sum(x, set, false);
  return ReduceFromGroup::apply(x, &set);
}

}  // namespace pw::rt

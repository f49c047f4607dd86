#include "runtime/tensor_parallel/tensor_agreement.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "runtime/replica_agreement.h"  // weights_fnv1a, hex64

namespace pw::rt {

void check_tensor_ranks_agree(const TensorSet& set, const WorkerRole& role, const std::vector<at::Tensor>& replicated,
                              std::int64_t after_iteration) {
  if (set.count < 2) return;
  const std::uint64_t mine = weights_fnv1a(replicated);
  std::vector<at::Tensor> in{to_wire(at::tensor({static_cast<std::int64_t>(mine)}, at::kLong), set.placement)};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int k = 0; k < set.count; ++k) out[0].push_back(at::empty_like(in[0]));
  set.group->allgather(out, in)->wait();
  std::vector<std::uint64_t> all;
  for (auto& t : out[0]) all.push_back(static_cast<std::uint64_t>(t.to(at::kCPU).item<std::int64_t>()));
  for (int k = 1; k < set.count; ++k)
    if (all[k] != all[0])
      throw std::runtime_error("stage " + std::to_string(role.stage) + ": tensor ranks 0 and " + std::to_string(k) +
                               " hold different copies of the unsplit weights (layer norms, biases, position "
                               "embedding) after iteration " + std::to_string(after_iteration) + " (FNV-1a " +
                               hex64(all[0]) + " vs " + hex64(all[k]) + ")");
}

}  // namespace pw::rt

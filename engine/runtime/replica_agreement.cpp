#include "runtime/replica_agreement.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "runtime/device_placement.h"

namespace pw::rt {

std::uint64_t weights_fnv1a(const std::vector<at::Tensor>& params) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (const auto& p : params) {
    at::Tensor t = p.detach().to(at::kCPU).contiguous();
    const auto* b = static_cast<const unsigned char*>(t.data_ptr());
    const std::size_t n = t.numel() * t.element_size();
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(std::uint64_t h) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(h));
  return s;
}

double mean_over_replicas(const ReplicaSet& replicas, const StageDevice& placement, double value) {
  if (replicas.count < 2) return value;
  std::vector<at::Tensor> buf{to_wire(at::tensor({value}, at::kDouble), placement)};
  replicas.group->allreduce(buf)->wait();
  return buf[0].to(at::kCPU).item<double>() / replicas.count;
}

std::vector<std::uint64_t> check_replicas_agree(const ReplicaSet& replicas, const StageDevice& placement,
                                                 const WorkerRole& role, const std::vector<at::Tensor>& params,
                                                 std::int64_t after_iteration) {
  const std::uint64_t mine = weights_fnv1a(params);
  if (replicas.count < 2) return {mine};
  // Gathered as int64 (the bits of the hash), one slot per replica.
  std::vector<at::Tensor> in{to_wire(at::tensor({static_cast<std::int64_t>(mine)}, at::kLong), placement)};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < replicas.count; ++r) out[0].push_back(at::empty_like(in[0]));
  replicas.group->allgather(out, in)->wait();
  std::vector<std::uint64_t> all;
  for (auto& t : out[0]) all.push_back(static_cast<std::uint64_t>(t.to(at::kCPU).item<std::int64_t>()));
  for (int r = 1; r < replicas.count; ++r)
    if (all[r] != all[0])
      throw std::runtime_error("stage " + std::to_string(role.stage) + ": replicas 0 and " + std::to_string(r) +
                               " hold different weights after iteration " + std::to_string(after_iteration) +
                               " (FNV-1a " + hex64(all[0]) + " vs " + hex64(all[r]) + ")");
  return all;
}

}  // namespace pw::rt

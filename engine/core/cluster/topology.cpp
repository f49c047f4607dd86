#include "core/cluster/topology.h"

#include <algorithm>


namespace pw {

NodeDefaults node_defaults(const std::string& preset, int devices, double link_gbps, double link_latency_us) {
  // Per GPU between nodes: the DGX/HGX generation each preset ships in
  // (V100: DGX-1, 4 x 100 Gbit/s EDR for 8 GPUs; A100: DGX A100, one
  // 200 Gbit/s HDR port per GPU, Megatron-LM's SC'21 cluster; H100/H200:
  // one 400 Gbit/s NDR port per GPU); a 2080 Ti box on 25 Gbit/s Ethernet
  // (VPipe's testbed class). Latencies: RDMA's few microseconds.
  if (preset == "rtx2080ti") return {8, 25, 10};
  if (preset == "v100-32g") return {8, 50, 8};
  if (preset == "a100-80g") return {8, 200, 6};
  if (preset == "h100" || preset == "h200") return {8, 400, 5};
  // CPU processes and custom devices: one host unless the job says more;
  // between hosts, the intra-node figures unless the job says otherwise.
  return {std::max(1, devices), link_gbps, link_latency_us};
}

int device_of(int stage, int replica, int replicas, int tensor, int tensor_rank) {
  return (stage * replicas + replica) * tensor + tensor_rank;
}

bool tensor_group_fits(int tensor, int gpus_per_node, int devices) {
  if (tensor <= 1) return true;
  return gpus_per_node % tensor == 0 || (tensor <= gpus_per_node && devices <= gpus_per_node);
}

int node_of(const Topology& t, int device) { return device / std::max(1, t.gpus_per_node); }

LinkSpeed group_link(const Topology& t, int first_device, int count) {
  const bool crosses = count > 1 && node_of(t, first_device) != node_of(t, first_device + count - 1);
  if (crosses) return {t.node_link_gbps, t.node_link_latency_us, true};
  return {t.link_gbps, t.link_latency_us, false};
}

double ring_allreduce_ms(std::uint64_t bytes, int group, const LinkSpeed& link) {
  if (group <= 1 || bytes == 0) return 0;
  const double g = group;
  const double moved = 2.0 * (g - 1.0) / g * static_cast<double>(bytes);
  return moved * 8.0 / (link.gbps * 1e9) * 1e3 + 2.0 * (g - 1.0) * link.latency_us * 1e-3;
}

LinkSpeed stages_link(const Topology& t, int a, int b, int replicas, int tensor) {
  for (int r = 0; r < replicas; ++r)
    if (node_of(t, device_of(a, r, replicas, tensor)) != node_of(t, device_of(b, r, replicas, tensor)))
      return {t.node_link_gbps, t.node_link_latency_us, true};
  return {t.link_gbps, t.link_latency_us, false};
}

}  // namespace pw

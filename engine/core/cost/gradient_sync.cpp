#include "core/cost/gradient_sync.h"

#include <algorithm>

namespace pw {

LinkSpeed replica_group_link(const GradientSync& sync, int device, const LinkSpeed& device_link) {
  if (!sync.has_topology) return device_link;
  if (sync.tensor <= 1) return group_link(sync.topology, device_of(device, 0, sync.replicas), sync.replicas);
  // One tensor rank's replicas, `tensor` apart: the first and last decide.
  const int first = device_of(device, 0, sync.replicas, sync.tensor);
  const int last = device_of(device, sync.replicas - 1, sync.replicas, sync.tensor);
  const Topology& t = sync.topology;
  if (sync.replicas > 1 && node_of(t, first) != node_of(t, last)) return {t.node_link_gbps, t.node_link_latency_us, true};
  return {t.link_gbps, t.link_latency_us, false};
}

LinkSpeed pipeline_link(const GradientSync& sync, int a, int b, const LinkSpeed& device_link) {
  if (!sync.has_topology) return device_link;
  return stages_link(sync.topology, a, b, sync.replicas, sync.tensor);
}

std::vector<SyncBucket> sync_buckets(const ModelProfile& profile, const StageRange& range, const GradientSync& sync,
                                     int device, bool split_backward, const LinkSpeed& device_link) {
  std::vector<SyncBucket> out;
  if (!sync.enabled()) return out;
  const LinkSpeed link = replica_group_link(sync, device, device_link);
  // The backward still to run after layer l's gradients exist: layers
  // first..l-1 (reverse order), their W alone when it is split.
  auto grad_time = [&](int l) {
    const LayerProfile& p = profile.layers[l];
    return split_backward ? weight_grad_ms(p) : p.bwd_ms;
  };
  double after = 0;  // backward time of layers [range.first, l)
  std::vector<double> before_end(range.size());
  for (int l = range.first_layer; l <= range.last_layer; ++l) {
    before_end[l - range.first_layer] = after;
    after += grad_time(l);
  }
  SyncBucket cur;
  cur.last_layer = range.last_layer;
  for (int l = range.last_layer; l >= range.first_layer; --l) {
    cur.bytes += profile.layers[l].param_bytes;
    cur.first_layer = l;
    if (cur.bytes >= sync.bucket_bytes || l == range.first_layer) {
      if (cur.bytes > 0) {
        cur.ms = ring_allreduce_ms(cur.bytes, sync.replicas, link);
        cur.ready_before_end_ms = before_end[l - range.first_layer];
        out.push_back(cur);
      }
      cur = SyncBucket{};
      cur.last_layer = l - 1;
    }
  }
  return out;
}

}  // namespace pw

// A forward-only pass over a test set: classification accuracy.
#include "runtime/stage/stage_impl.h"

#include "runtime/tensor_parallel/vocab_cross_entropy.h"

#include <torch/utils.h>
#include <algorithm>
#include <cmath>

namespace pw::rt {

using namespace stage_impl;

double StageExecutor::Impl::evaluate(const Dataset& test) {
  torch::NoGradGuard ng;
  const int b = job.training.microbatch_size;
  // A tag range of its own (tagged mode); ordered mode relies on both ends
  // posting in pipeline order, batch by batch, which this loop does.
  const int base = 1 << 28;
  Messenger& messenger = messaging.messenger();
  int64_t correct = 0, seen = 0;
  // The job's schedule places the virtual stages: an async run's program
  // (one chunk per device, as the job's) places them alike.
  auto peer_of = [this](int vstage) { return schedule.device_of_virtual_stage(vstage); };
  // This device's virtual stages in model order (a V-shaped placement
  // holds its second chunk's stage after the first's, both in order).
  std::vector<int> mine;
  for (int chunk = 0; chunk < schedule.chunks(); ++chunk) mine.push_back(schedule.virtual_stage(device, chunk));
  std::sort(mine.begin(), mine.end());
  for (int64_t k = 0; k * b < test.size(); ++k) {
    int64_t n = std::min<int64_t>(b, test.size() - k * b);
    at::Tensor handed;  // the output of this device's previous virtual stage, when the next is here too
    for (int v : mine) {
      const auto& r = plan.stages[v];
      at::Tensor x;
      if (v == 0) {
        x = on_device(test.inputs.narrow(0, k * b, n), placement);
      } else if (peer_of(v - 1) == device) {
        x = handed;
      } else {
        auto shape = shapes[r.first_layer];
        shape[0] = n;
        std::vector<at::Tensor> buf{recv_buffer(shape, placement)};
        messenger.recv(buf, peer_of(v - 1), base + v)->wait();
        x = from_wire(buf[0], placement);
      }
      for (int l = r.first_layer; l <= r.last_layer; ++l) x = layers[l]->forward(x);
      if (v < vstages - 1 && peer_of(v + 1) == device) {
        handed = x;
      } else if (v < vstages - 1) {
        std::vector<at::Tensor> buf{to_wire(x, placement)};
        messenger.send(buf, peer_of(v + 1), base + v + 1)->wait();
      } else {
        // Classes, or tokens (positions labelled -100 are not scored).
        auto labels = on_device(test.labels.narrow(0, k * b, n), placement);
        auto scored = labels.ne(-100);
        // A tensor-parallel head's logits are this rank's vocabulary shard.
        const at::Tensor predicted = tensors.count > 1 ? vocab_parallel_argmax(x, tensors) : x.argmax(-1);
        correct += predicted.eq(labels).logical_and(scored).sum().item<int64_t>();
        seen += scored.sum().item<int64_t>();
      }
    }
  }
  return seen ? static_cast<double>(correct) / seen : NAN;
}

}  // namespace pw::rt

#pragma once
#include <c10/core/Device.h>

#include <string>

#include "core/model/layer_profile.h"
#include "core/spec/job_spec.h"

namespace pw::rt {

struct ProfileOptions {
  int repeats = 10;  // timed runs per layer (median), after 2 warm-up runs
  int threads = 0;   // intra-op threads (0: cores / stages, as a worker gets)
  std::string device = "auto";  // auto (a GPU where libtorch sees one, as a worker), cpu, cuda
};

// The device `measure_profile` measures on for ProfileOptions::device.
// Throws std::invalid_argument for "cuda" without a CUDA device, or an
// unknown name.
c10::Device profile_device(const std::string& requested);

// Measures every layer of the job's model on this machine, one microbatch
// at a time, on the device a stage would compute on (options.device; timed
// by that device's clock, core of runtime/event_clock.h, and metered by its
// allocator): forward and backward time (median), bytes a kept layer holds
// for backward (allocator-counted, plus its input as the analytic profile
// counts it), input/output/parameter bytes, optimizer state and step time.
// The result is the same structure the planner takes (source "measured").
ModelProfile measure_profile(const JobSpec& job, const ProfileOptions& options = {});

// The stage-to-stage link as local workers see it: Gloo point-to-point over
// loopback TCP between two ranks in this process (the workers' transport
// and Gloo thread count), timed as half a ping-pong of 4 bytes (latency)
// and of `bytes` (bandwidth). Feeds cluster.link_gbps / link_latency_us,
// which is how the cost model prices a send.
struct LinkProfile {
  double gbps = 0;
  double latency_us = 0;
  // How long the send call holds the sending thread (Gloo's TCP pair
  // writes into the socket from the caller when it can): per message and
  // per byte. Feeds cluster.send_cpu_us / send_cpu_gbps.
  double send_cpu_us = 0;
  double send_cpu_gbps = 0;
};
LinkProfile measure_local_link(std::int64_t bytes, int repeats = 20);

// What sends really held their senders in a run (its events/stage*.jsonl),
// fitted as send_cpu_us + bytes at send_cpu_gbps (least squares over the
// median per message size; one size gives a per-message time only). On a
// shared CPU the copy
// into the socket waits for the receiving process's I/O thread to get a
// core, which an isolated ping-pong never shows; a short run of the job
// itself does. Returns `link` with the two send fields replaced; unchanged
// when the run has no sends.
LinkProfile calibrate_sends(const std::string& run_dir, LinkProfile link);

}  // namespace pw::rt

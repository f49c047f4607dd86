// The presets' device-to-device links per direction, as every use reads
// link_gbps (core/spec/device.cpp): NVIDIA quotes NVLink as the total of
// both directions, so each preset holds half the datasheet's figure.
#include <gtest/gtest.h>

#include "core/cost/stage_cost.h"
#include "core/model/tensor_parallel.h"
#include "core/spec/device.h"

using namespace pw;

TEST(DeviceLinks, NvlinkPresetsHoldHalfTheDatasheetsBidirectionalTotal) {
  // GB/s, both directions: V100 SXM2 (NVLink 2, 6 links), A100 SXM (NVLink
  // 3, 12 links), H100 and H200 SXM (NVLink 4, 18 links), 25 GB/s a link
  // and direction.
  const struct {
    const char* preset;
    double total_gbytes;
    int links;
  } sheets[] = {{"v100-32g", 300, 6}, {"a100-80g", 600, 12}, {"h100", 900, 18}, {"h200", 900, 18}};
  for (const auto& s : sheets) {
    SCOPED_TRACE(s.preset);
    ASSERT_DOUBLE_EQ(s.links * 25.0 * 2, s.total_gbytes);
    EXPECT_DOUBLE_EQ(device_preset(s.preset)->link_gbps, s.total_gbytes / 2 * 8);
  }
}

TEST(DeviceLinks, TransfersAndRingsRunAtTheOneWayRate) {
  const DeviceSpec a100 = *device_preset("a100-80g");
  // 300 MB one way at 300 GB/s: 1 ms and the 6 us latency.
  EXPECT_NEAR(transfer_ms(300'000'000, a100.link_gbps, a100.link_latency_us), 1.0 + 0.006, 1e-12);
  // A ring of 8: each member sends (and receives) 2 x 7/8 of the 300 MB,
  // 525 MB at 300 GB/s = 1.75 ms, in 14 steps of 6 us.
  const LinkSpeed nvlink{a100.link_gbps, a100.link_latency_us, false};
  EXPECT_NEAR(tensor_allreduce_ms(300'000'000, 8, nvlink), 1.75 + 14 * 0.006, 1e-12);
}

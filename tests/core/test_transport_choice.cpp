// cluster.backend: the transport and each stage's device, from what every
// stage process sees (core/cluster/transport_choice.h).
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "core/cluster/transport_choice.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

using namespace pw;

namespace {
// `n` stages on one host with `gpus` GPUs, LOCAL_RANK = stage index (the
// fallback for a single-host run).
std::vector<StageSite> one_host(int n, int gpus) {
  std::vector<StageSite> s;
  for (int r = 0; r < n; ++r) s.push_back({"h", r, gpus});
  return s;
}

std::string error_of(const std::string& requested, const std::vector<StageSite>& s, bool nccl_built) {
  try {
    choose_transport(requested, s, nccl_built);
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "cluster.backend");
    return e.what();
  }
  return "";
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(TransportChoice, NcclWhenEveryStageHasItsOwnGpu) {
  for (std::string req : {"auto", "nccl"}) {
    TransportChoice c = choose_transport(req, one_host(4, 4), true);
    EXPECT_EQ(c.backend, "nccl");
    EXPECT_EQ(c.reason, "nccl: 4 stages, one GPU each");
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(c.stages[r].device(), "cuda:" + std::to_string(r));
      EXPECT_FALSE(c.stages[r].host_staged);
    }
  }
  // Two hosts of two GPUs each: torchrun restarts LOCAL_RANK per host.
  TransportChoice c = choose_transport("auto", {{"a", 0, 2}, {"a", 1, 2}, {"b", 0, 2}, {"b", 1, 2}}, true);
  EXPECT_EQ(c.backend, "nccl");
  EXPECT_EQ(c.reason, "nccl: 4 stages on 2 hosts, one GPU each");
  EXPECT_EQ(c.stages[2].device(), "cuda:0");
  EXPECT_EQ(c.stages[3].device(), "cuda:1");
}

TEST(TransportChoice, StagesSharingAGpuGoThroughHostMemory) {
  TransportChoice c = choose_transport("auto", one_host(2, 1), true);
  EXPECT_EQ(c.backend, "gloo");
  EXPECT_EQ(c.reason, "gloo over host-staged copies: stages 0 and 1 share cuda:0");
  for (const auto& p : c.stages) {
    EXPECT_EQ(p.device(), "cuda:0");
    EXPECT_TRUE(p.host_staged);
  }
  // Four stages on two GPUs: LOCAL_RANK wraps, 0 and 2 share cuda:0.
  c = choose_transport("auto", one_host(4, 2), true);
  EXPECT_EQ(c.reason, "gloo over host-staged copies: stages 0 and 2 share cuda:0");
  EXPECT_EQ(c.stages[3].device(), "cuda:1");
  EXPECT_EQ(choose_transport("auto", one_host(3, 1), true).reason,
            "gloo over host-staged copies: stages 0, 1 and 2 share cuda:0");
  // Only the host of the shared GPU matters: one GPU per host is no sharing.
  c = choose_transport("auto", {{"a", 0, 1}, {"b", 0, 1}, {"b", 1, 1}}, true);
  EXPECT_EQ(c.reason, "gloo over host-staged copies: stages 1 and 2 share cuda:0 on host b");
}

TEST(TransportChoice, GlooWithoutCuda) {
  for (std::string req : {"auto", "gloo"})
    for (bool built : {false, true}) {
      TransportChoice c = choose_transport(req, one_host(4, 0), built);
      EXPECT_EQ(c.backend, "gloo");
      EXPECT_EQ(c.reason, "gloo: no CUDA");
      for (const auto& p : c.stages) {
        EXPECT_EQ(p.device(), "cpu");
        EXPECT_FALSE(p.host_staged);
      }
    }
}

TEST(TransportChoice, GlooAsRequestedOrForWantOfNccl) {
  EXPECT_EQ(choose_transport("gloo", one_host(2, 2), true).reason,
            "gloo over host-staged copies: cluster.backend is \"gloo\"");
  EXPECT_EQ(choose_transport("auto", one_host(2, 2), false).reason,
            "gloo over host-staged copies: this build has no NCCL");
  // A host without GPUs among hosts with them: its stage computes on the CPU.
  TransportChoice c = choose_transport("auto", {{"a", 0, 1}, {"b", 0, 0}}, true);
  EXPECT_EQ(c.reason, "gloo over host-staged copies: stage 1 sees no GPU");
  EXPECT_EQ(c.stages[0].device(), "cuda:0");
  EXPECT_TRUE(c.stages[0].host_staged);
  EXPECT_EQ(c.stages[1].device(), "cpu");
  EXPECT_FALSE(c.stages[1].host_staged);
}

TEST(TransportChoice, NcclRefusalsNameTheFieldAndTheWayOut) {
  std::string e = error_of("nccl", one_host(2, 0), true);
  EXPECT_TRUE(has(e, "cluster.backend: \"nccl\" needs CUDA, and no stage sees a GPU")) << e;
  EXPECT_TRUE(has(e, "use \"auto\" or \"gloo\"")) << e;
  e = error_of("nccl", {{"a", 0, 1}, {"b", 0, 0}}, true);
  EXPECT_TRUE(has(e, "needs a GPU on every stage; stage 1 (host b) sees none")) << e;
  e = error_of("nccl", one_host(2, 2), false);
  EXPECT_TRUE(has(e, "this one has none")) << e;
  e = error_of("nccl", one_host(2, 1), true);
  EXPECT_TRUE(has(e, "NCCL cannot send between two stages on one GPU: stages 0 and 1 share cuda:0")) << e;
  EXPECT_TRUE(has(e, "use \"auto\" or \"gloo\"")) << e;
  EXPECT_TRUE(has(error_of("infiniband", one_host(1, 0), true), "must be one of auto, gloo, nccl")) << "";
  EXPECT_THROW(choose_transport("auto", {}, true), std::invalid_argument);
  EXPECT_THROW(choose_transport("auto", {{"h", -1, 1}}, true), std::invalid_argument);
}

// Every placement of up to 4 stages on up to 2 hosts with 0-3 GPUs each and
// any LOCAL_RANK < 4, every request, with and without NCCL: the outcome
// against the rules restated directly (who has a GPU, which GPUs repeat).
TEST(TransportChoice, ExhaustiveSmallClusters) {
  int cases = 0;
  for (int n = 1; n <= 4; ++n)
    for (int gpus_a = 0; gpus_a <= 3; ++gpus_a)
      for (int gpus_b = 0; gpus_b <= 3; ++gpus_b)
        for (int hosts_mask = 0; hosts_mask < (1 << n); ++hosts_mask)
          for (int ranks = 0; ranks < (1 << (2 * n)); ++ranks) {
            std::vector<StageSite> s;
            for (int r = 0; r < n; ++r) {
              bool b = (hosts_mask >> r) & 1;
              s.push_back({b ? "b" : "a", (ranks >> (2 * r)) & 3, b ? gpus_b : gpus_a});
            }
            std::set<std::pair<std::string, int>> gpus_used;
            int with_gpu = 0;
            bool repeats = false;
            for (const auto& x : s)
              if (x.visible_gpus > 0) {
                ++with_gpu;
                repeats |= !gpus_used.insert({x.host, x.local_rank % x.visible_gpus}).second;
              }
            for (std::string req : {"auto", "gloo", "nccl"})
              for (bool built : {false, true}) {
                ++cases;
                bool nccl_ok = with_gpu == n && !repeats && built;
                if (req == "nccl" && !nccl_ok) {
                  EXPECT_THROW(choose_transport(req, s, built), SpecError);
                  continue;
                }
                TransportChoice c = choose_transport(req, s, built);
                ASSERT_EQ(c.backend, req == "gloo" || !nccl_ok ? "gloo" : "nccl");
                ASSERT_EQ(c.stages.size(), s.size());
                for (int r = 0; r < n; ++r) {
                  int want = s[r].visible_gpus ? s[r].local_rank % s[r].visible_gpus : -1;
                  ASSERT_EQ(c.stages[r].cuda_index, want);
                  ASSERT_EQ(c.stages[r].host_staged, c.backend == "gloo" && want >= 0);
                }
                ASSERT_EQ(c.reason.rfind(c.backend, 0), 0u) << c.reason;
                ASSERT_EQ(c.reason.find('\n'), std::string::npos);
              }
          }
  EXPECT_GT(cases, 100000);
}

TEST(TransportChoice, JobSpecBackendDefaultsToAutoAndIsChecked) {
  auto doc = nlohmann::json::parse(R"({"name": "t",
    "model": {"kind": "uniform", "layers": 4, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1},
    "cluster": {"devices": 2}})");
  doc["cluster"]["memory_gb"] = 1;
  doc["cluster"]["tflops"] = 1;
  EXPECT_EQ(parse_job(doc).cluster.backend, "auto");
  doc["cluster"]["backend"] = "nccl";
  EXPECT_EQ(parse_job(doc).cluster.backend, "nccl");
  doc["cluster"]["backend"] = "mpi";
  try {
    parse_job(doc);
    FAIL() << "backend \"mpi\" accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "cluster.backend");
    EXPECT_TRUE(has(e.what(), "must be one of auto, gloo, nccl, got \"mpi\"")) << e.what();
  }
}

// Ordered messaging (issue 18): every operation posted at its place in the
// schedule's comm order (core/schedule/comm_order.h), all with tag 0, so
// Gloo pairs sends and receives FIFO per device pair exactly as NCCL does.
// A wrong order would pair the wrong tensors (other weights, or a shape
// error) or hang; the right one trains bitwise as the tagged mode does, on
// every schedule and stage count the equivalence tests run, and as the
// single-process reference loop.
#include <gtest/gtest.h>

#include "reference_loop.h"
#include "run_helpers.h"

namespace pw::rt {
namespace {
using namespace testing;

struct MessagingCase {
  const char* schedule;
  int stages, microbatches, chunks;
  std::vector<int> widths;
};

void PrintTo(const MessagingCase& c, std::ostream* os) {
  *os << c.schedule << " " << c.stages << " stages " << c.microbatches << " microbatches";
}

struct MessagingTrained {
  RunResult result;
  std::vector<at::Tensor> weights;  // stage files in device order
};

MessagingTrained train(nlohmann::json doc, const std::string& messaging) {
  doc["cluster"]["messaging"] = messaging;
  // And the test-set pass after training, whose sends and receives go
  // through the same messenger (evaluation.cpp).
  doc["data"]["test_samples"] = 64;
  std::string dir = temp_dir("ordered");
  RunOptions o = options(doc, dir);
  o.eval = true;
  MessagingTrained t;
  t.result = run_job(o);
  if (t.result.exit_code == 0) t.weights = run_weights(dir, doc["cluster"]["devices"].get<int>());
  std::filesystem::remove_all(dir);
  return t;
}

nlohmann::json job_of(const MessagingCase& c) {
  auto doc = mlp_job(c.stages, c.microbatches, c.schedule, c.widths);
  if (c.chunks > 1) doc["pipeline"]["chunks"] = c.chunks;
  return doc;
}

class OrderedMessaging : public ::testing::TestWithParam<MessagingCase> {};

TEST_P(OrderedMessaging, BitwiseTheTaggedRunAndTheReference) {
  MessagingCase c = GetParam();
  auto doc = job_of(c);
  MessagingTrained tagged = train(doc, "tagged");
  MessagingTrained ordered = train(doc, "ordered");
  ASSERT_EQ(tagged.result.exit_code, 0) << tagged.result.error;
  ASSERT_EQ(ordered.result.exit_code, 0) << ordered.result.error;
  ASSERT_EQ(ordered.result.losses.size(), tagged.result.losses.size());
  for (size_t i = 0; i < tagged.result.losses.size(); ++i)
    EXPECT_EQ(ordered.result.losses[i], tagged.result.losses[i]) << "iteration " << i;
  ASSERT_EQ(ordered.weights.size(), tagged.weights.size());
  ASSERT_FALSE(ordered.weights.empty());
  for (size_t i = 0; i < tagged.weights.size(); ++i)
    EXPECT_TRUE(at::equal(ordered.weights[i], tagged.weights[i])) << "parameter " << i;
  EXPECT_GE(ordered.result.accuracy, 0.0);
  EXPECT_EQ(ordered.result.accuracy, tagged.result.accuracy);
  // Flush schedules on a straight pipeline (stage files in model order)
  // also match the reference loop, independently of either mode.
  std::string s = c.schedule;
  if (s == "gpipe" || s == "1f1b" || s == "zb-h1" || s == "zb-h2" || s == "generated") {
    Reference ref = reference_loop(parse_job(doc));
    ASSERT_EQ(ordered.weights.size(), ref.weights.size());
    for (size_t i = 0; i < ref.weights.size(); ++i) {
      double scale = ref.weights[i].abs().max().item<double>();
      EXPECT_LE((ordered.weights[i] - ref.weights[i]).abs().max().item<double>(), 1e-5 * scale) << "parameter " << i;
    }
  }
}

// The shapes of test_equivalence.cpp (microbatches < stages included),
// PipeDream's of its stashing test, test_zero_bubble.cpp's, interleaved, and
// a generated order (issue 28) on 4 stages.
INSTANTIATE_TEST_SUITE_P(
    Runtime, OrderedMessaging,
    ::testing::Values(MessagingCase{"gpipe", 2, 4, 1, {32, 32, 32}}, MessagingCase{"1f1b", 2, 4, 1, {32, 32, 32}},
                      MessagingCase{"gpipe", 4, 4, 1, {32, 32, 32}}, MessagingCase{"1f1b", 4, 6, 1, {32, 32, 32}},
                      MessagingCase{"1f1b", 4, 2, 1, {32, 32, 32}}, MessagingCase{"pipedream", 2, 4, 1, {32, 32, 32}},
                      MessagingCase{"pipedream", 3, 4, 1, {32, 32, 32}}, MessagingCase{"zb-h1", 2, 4, 1, {24, 24, 24, 24, 24}},
                      MessagingCase{"zb-h2", 2, 4, 1, {24, 24, 24, 24, 24}}, MessagingCase{"zb-v", 2, 4, 2, {24, 24, 24, 24, 24}},
                      MessagingCase{"dualpipe-v", 2, 4, 2, {24, 24, 24, 24, 24}},
                      MessagingCase{"interleaved", 2, 4, 2, {24, 24, 24, 24, 24}},
                      MessagingCase{"generated", 4, 4, 1, {24, 24, 24, 24, 24}}),
    [](const auto& info) {
      std::string n = info.param.schedule;
      for (auto& ch : n)
        if (ch == '-') ch = '_';
      if (n == "1f1b") n = "onefoneb";
      return n + "_" + std::to_string(info.param.stages) + "stages_" + std::to_string(info.param.microbatches) + "mb";
    });

}  // namespace
}  // namespace pw::rt

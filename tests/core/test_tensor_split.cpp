// The one rule of which tensor sizes can split a model (core/spec/
// tensor_split.h): the job check, the planner's parallel.tensor "auto" and
// the engine all use it, so a plan never chooses a t the run refuses. The
// vocabulary is split too (the engine's vocab_layers) and never padded.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/job/job_plan.h"
#include "core/plan/parallel_search.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"
#include "core/spec/tensor_split.h"

using namespace pw;

namespace {

// Heads 16 and FFN 4096 divide every t up to 8: only the vocabulary can
// stand in a size's way.
nlohmann::json split_job(int vocab, const nlohmann::json& tensor) {
  return {{"name", "split"},
          {"model",
           {{"kind", "gpt"}, {"precision", "fp16"}, {"layers", 4}, {"hidden", 1024}, {"heads", 16},
            {"seq_len", 512}, {"vocab", vocab}}},
          {"training", {{"batch_size", 16}, {"microbatch_size", 2}}},
          {"cluster", {{"devices", 8}, {"device", "a100-80g"}}},
          {"pipeline", {{"schedule", "1f1b"}}},
          {"parallel", {{"tensor", tensor}}}};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(TensorSplit, EachDivisorOfTheModelIsNamed) {
  ModelSpec m;
  m.kind = "gpt";
  m.heads = 12;
  m.hidden = 768;
  m.ffn_mult = 4;
  m.vocab = 50257;  // GPT-2's, odd: no t > 1 divides it
  EXPECT_FALSE(tensor_split_refusal(m, 1));
  auto why = tensor_split_refusal(m, 2);
  ASSERT_TRUE(why);
  EXPECT_TRUE(contains(*why, "model.vocab")) << *why;
  EXPECT_TRUE(contains(*why, "50257")) << *why;
  // Megatron's padding, the next multiple of 128 x t: 197 x 256 = 50432
  // at t = 2, 50 x 1024 = 51200 at t = 8 (with heads 8 divides).
  EXPECT_TRUE(contains(*why, "50432")) << *why;
  m.heads = 16;
  EXPECT_TRUE(contains(tensor_split_refusal(m, 8).value_or(""), "51200"));
  m.heads = 12;
  m.vocab = 51200;
  for (int t : {2, 4}) EXPECT_FALSE(tensor_split_refusal(m, t)) << t;
  why = tensor_split_refusal(m, 8);  // 12 heads
  ASSERT_TRUE(why);
  EXPECT_TRUE(contains(*why, "model.heads (12)")) << *why;
  m.heads = 8;
  m.ffn_mult = 1;
  m.hidden = 764;  // 764 = 4 x 191
  why = tensor_split_refusal(m, 8);
  ASSERT_TRUE(why);
  EXPECT_TRUE(contains(*why, "model.ffn_mult x model.hidden (764)")) << *why;
}

TEST(TensorSplit, APinnedSizeNotDividingTheVocabularyIsRefusedNamingBothFields) {
  try {
    parse_job(split_job(1002, 4));
    FAIL() << "t = 4 accepted for a vocabulary of 1002";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "parallel.tensor");
    EXPECT_TRUE(contains(e.what(), "model.vocab")) << e.what();
    EXPECT_TRUE(contains(e.what(), "1002")) << e.what();
  }
  EXPECT_NO_THROW(parse_job(split_job(1002, 2)));
  EXPECT_NO_THROW(parse_job(split_job(1000, 8)));
}

// For each vocabulary, tensor "auto" on 8 devices of one node plans only
// the sizes dividing it (each planned row's t divides it; the choice too)
// and has one "skipped" row naming model.vocab for each size that does not,
// the sets taken from a plain loop over 2, 4, 8.
TEST(TensorSplit, TensorAutoNeverChoosesASizeTheVocabularyRefuses) {
  for (int vocab : {1000, 1002, 1004, 50257}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    std::set<int> dividing{1}, refused;
    for (int t = 2; t <= 8; t *= 2) (vocab % t == 0 ? dividing : refused).insert(t);
    PreparedJob p = prepare_job(parse_job(split_job(vocab, "auto")));
    EXPECT_EQ(vocab % p.job.parallel.tensor, 0) << p.job.parallel.tensor;
    std::set<int> planned, skipped;
    for (const auto& row : p.plan.parallel_search) {
      if (row.stages == 0) {
        skipped.insert(row.tensor);
        EXPECT_EQ(row.reason.rfind("skipped: ", 0), 0u) << row.reason;
        EXPECT_TRUE(contains(row.reason, "model.vocab")) << row.reason;
        EXPECT_EQ(row.iteration_time_ms, 0.0);
        EXPECT_FALSE(row.feasible);
        continue;
      }
      planned.insert(row.tensor);
      EXPECT_EQ(vocab % row.tensor, 0) << row.tensor;
    }
    EXPECT_EQ(planned, dividing);
    EXPECT_EQ(skipped, refused);
    EXPECT_EQ(tensor_candidates(parse_job(split_job(vocab, "auto"))), std::vector<int>(dividing.begin(), dividing.end()));
    // The skipped rows travel with the plan (plan --json).
    const auto rows = to_json(p.plan)["parallel_search"];
    std::set<int> skipped_json;
    for (const auto& r : rows)
      if (r.value("stages", 0) == 0) skipped_json.insert(r.value("tensor", 0));
    EXPECT_EQ(skipped_json, refused);
  }
}

// A job large enough that the search wants a tensor group (t = 4 when
// written, at 51200 = Megatron's padded GPT-2 vocabulary): at 50257 the
// same search stays at t = 1, which the run accepts.
TEST(TensorSplit, ThePaddedVocabularyGetsTheTensorGroupBack) {
  auto big = [](int vocab) {
    auto d = split_job(vocab, "auto");
    d["model"]["layers"] = 8;
    d["model"]["hidden"] = 8192;
    d["model"]["heads"] = 64;
    d["model"]["seq_len"] = 2048;
    d["training"] = {{"batch_size", 8}, {"microbatch_size", 1}};
    return d;
  };
  const PreparedJob padded = prepare_job(parse_job(big(51200)));
  EXPECT_GT(padded.job.parallel.tensor, 1);
  const PreparedJob gpt2 = prepare_job(parse_job(big(50257)));
  EXPECT_EQ(gpt2.job.parallel.tensor, 1);
  EXPECT_TRUE(gpt2.plan.feasible);
}

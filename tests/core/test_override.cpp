// `--set` overrides (core/spec/override.h), hostile ones included (issue 41,
// items 1 and 2): a key of any length or depth and a value of any bytes are
// a SpecError naming `--set` or the key, before the document changes; an
// accepted override leaves a document a job file could be (depth, UTF-8).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/spec/bounded_json.h"
#include "core/spec/job_spec.h"
#include "core/spec/override.h"
#include "core/spec/spec_error.h"

using namespace pw;
using json = nlohmann::json;

namespace {
const std::string kUniform = R"({
  "name": "u",
  "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1},
  "training": {"batch_size": 16, "microbatch_size": 2},
  "cluster": {"devices": 4, "device": "v100-32g"},
  "pipeline": {"stages": 4}
})";

std::string dotted(int parts) {
  std::string key = "a";
  for (int i = 1; i < parts; ++i) key += ".a";
  return key;
}

// The refusal of one override on `doc`; the document must be unchanged by it.
SpecError refusal_of(const std::string& assignment, json doc = json::parse(kUniform)) {
  const json before = doc;
  try {
    apply_override(doc, assignment);
  } catch (const SpecError& e) {
    EXPECT_EQ(doc, before) << "a refused override changed the document";
    return e;
  }
  ADD_FAILURE() << "accepted: " << assignment.substr(0, 80);
  return SpecError("", "");
}

bool all_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}
}  // namespace

// The issue's crash: a 60,000-part key built a 60,000-deep document, whose
// copy into JobSpec::raw overflowed the stack (SIGSEGV). Now refused at once.
TEST(Override, A60000PartKeyIsRefusedNamingSetAndTheLimit) {
  const std::string key = dotted(60000);
  SpecError e = refusal_of(key + "=1");
  EXPECT_EQ(e.path(), "--set");
  EXPECT_NE(e.reason().find("60000 parts; at most 64"), std::string::npos) << e.reason();
  EXPECT_LT(std::string(e.what()).size(), 1000u);  // the key is clipped, not echoed
  // Through the whole path a command takes.
  EXPECT_THROW(job_from_text(kUniform, ".", {key + "=1"}), SpecError);
}

TEST(Override, KeyPartsAndValueNestTogetherAtMostAsDeepAsAFile) {
  // 64 parts and a scalar: exactly the bound (the root object is level 1).
  json doc = json::object();
  apply_override(doc, dotted(kMaxJsonDepth) + "=1");
  EXPECT_EQ(json_depth(doc), kMaxJsonDepth);
  EXPECT_EQ(refusal_of(dotted(kMaxJsonDepth + 1) + "=1", json::object()).path(), "--set");
  // Two parts leave 62 levels to the value.
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  doc = json::parse(kUniform);
  apply_override(doc, "model.x=" + nested(kMaxJsonDepth - 2));
  EXPECT_EQ(json_depth(doc), kMaxJsonDepth);
  SpecError e = refusal_of("model.x=" + nested(kMaxJsonDepth - 1));
  EXPECT_EQ(e.path().rfind("model.x", 0), 0u) << e.path();
  EXPECT_NE(e.reason().find("nest at most 64 levels together"), std::string::npos) << e.reason();
  // Deep keys over deep values, all refused or within the bound.
  for (int parts : {1, 2, 10, 33, 63, 64, 65, 100})
    for (int depth : {0, 1, 30, 62, 63, 64, 65}) {
      json d = json::object();
      try {
        apply_override(d, dotted(parts) + "=" + (depth ? nested(depth) : "1"));
      } catch (const SpecError&) {
        EXPECT_GT(parts + depth, kMaxJsonDepth);
        continue;
      }
      EXPECT_LE(parts + depth, kMaxJsonDepth);
      EXPECT_EQ(json_depth(d), parts + depth);
    }
}

TEST(Override, MalformedKeysNameSet) {
  EXPECT_EQ(refusal_of("novalue").path(), "--set");
  EXPECT_EQ(refusal_of("=1").path(), "--set");
  EXPECT_EQ(refusal_of("a..b=1").path(), "--set");
  EXPECT_EQ(refusal_of(".a=1").path(), "--set");
  EXPECT_EQ(refusal_of("name.x=1").path(), "name.x");  // inside a string
}

// Item 2: `--set name=$'\xff\xfe'` became a job whose name held raw bytes;
// dumped into a run database it threw nlohmann's type_error.316 (exit 1, a
// recording left "failed"); printed by plan and simulate, exit 0.
TEST(Override, AValueThatIsNotUtf8IsRefusedNamingTheField) {
  SpecError e = refusal_of("name=\xff\xfe");
  EXPECT_EQ(e.path(), "name");
  EXPECT_NE(e.reason().find("not valid UTF-8 (byte 0 is 0xff"), std::string::npos) << e.reason();
  EXPECT_TRUE(all_ascii(e.what())) << "the raw bytes are echoed";
  // Quoted, it is not JSON either (nlohmann's lexer checks strings): refused alike.
  EXPECT_EQ(refusal_of("name=\"ok\xc3\x28\"").path(), "name");
  EXPECT_THROW(job_from_text(kUniform, ".", {"name=\xff\xfe"}), SpecError);
  // A key that is not UTF-8 is not echoed either.
  SpecError k = refusal_of("na\xe9me=x");
  EXPECT_EQ(k.path(), "--set");
  EXPECT_TRUE(all_ascii(k.what())) << k.what();
  // Well-formed UTF-8 is a name like any other, and dumps.
  JobSpec j = job_from_text(kUniform, ".", {"name=na\xc3\xafve-\xe3\x82\xb8\xe3\x83\xa7\xe3\x83\x96"});
  EXPECT_EQ(j.name, "na\xc3\xafve-\xe3\x82\xb8\xe3\x83\xa7\xe3\x83\x96");
  EXPECT_NO_THROW((void)j.raw.dump());
}

// In a job file the parser's lexer finds it; the message says UTF-8 and names the field.
TEST(Override, AJobFileThatIsNotUtf8NamesTheField) {
  std::string text = kUniform;
  text.replace(text.find("\"u\""), 3, "\"u\xff\"");
  try {
    job_from_text(text, ".");
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "name");
    EXPECT_NE(e.reason().find("not valid UTF-8"), std::string::npos) << e.reason();
    EXPECT_TRUE(all_ascii(e.what()));
  }
}

TEST(Override, Utf8ValidationFollowsRfc3629) {
  std::size_t at = 99;
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"));
  EXPECT_FALSE(is_valid_utf8("ab\xc0\xaf", &at));  // overlong '/'
  EXPECT_EQ(at, 2u);
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong, 3 bytes
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate (U+D800)
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xf5\x80\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("x\xe2\x82", &at));    // truncated
  EXPECT_EQ(at, 1u);
  EXPECT_FALSE(is_valid_utf8("\x80"));              // a lone continuation byte
  EXPECT_FALSE(is_valid_utf8(std::string("\xc3\x00", 2)));
}

TEST(Override, DepthIsMeasuredWithoutRecursion) {
  EXPECT_EQ(json_depth(json(1)), 0);
  EXPECT_EQ(json_depth(json::array()), 1);
  EXPECT_EQ(json_depth(json::parse(R"({"a": [1, {"b": []}], "c": {}})")), 4);
  // Built in place (parse_bounded_json would refuse it): 200,000 levels.
  json deep = json::array();
  json* p = &deep;
  for (int i = 0; i < 200000; ++i) {
    p->push_back(json::array());
    p = &(*p)[0];
  }
  EXPECT_EQ(json_depth(deep), 200001);
}

// The output rule never replaces a file the command reads (issue 41, item 6:
// `simulate J --trace J --overwrite` turned the job being read into a
// trace): compared by device and inode, so every name of the file is caught.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/io/checked_write.h"
#include "output_rule_util.h"

namespace fs = std::filesystem;
using namespace pw;
using pw::test::put;
using pw::test::read;
using pw::test::refusal;

namespace {

const std::string kJob = R"({"name": "the user's job"})";

}  // namespace

TEST(OutputInputs, TheJobBeingReadIsNeverReplacedEvenWithOverwrite) {
  test::TempDir d("pw-output-inputs");
  const std::string job = d.file("job.json");
  put(job, kJob);
  const std::vector<InputFile> inputs{{job, "the job file"}};
  // Every name of the file: as given, through "./", a symbolic and a hard link.
  fs::create_symlink("job.json", d.file("link.json"));
  fs::create_hard_link(job, d.file("hard.json"));
  for (const std::string& name : {job, (d.path / "." / "job.json").string(), d.file("link.json"), d.file("hard.json")}) {
    std::string why = refusal([&] { write_output({name, "--trace", true, inputs}, "a trace"); });
    EXPECT_NE(why.find("--trace " + name + ": is the job file this command reads (" + job + ")"), std::string::npos) << why;
    EXPECT_NE(why.find("even with --overwrite"), std::string::npos) << why;
    EXPECT_EQ(read(job), kJob);
    why = refusal([&] { OutputStream s({name, "--trace", true, inputs}); });
    EXPECT_FALSE(why.empty()) << name;
    why = refusal([&] { OutputByOther o({name, "-o", true, inputs}); });
    EXPECT_FALSE(why.empty()) << name;
  }
  EXPECT_EQ(read(job), kJob);
  // No temporary left beside it.
  for (const auto& e : fs::directory_iterator(d.path)) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
}

TEST(OutputInputs, OtherFilesAreWrittenAsBefore) {
  test::TempDir d("pw-output-inputs");
  const std::string job = d.file("job.json"), trace = d.file("trace.json");
  put(job, kJob);
  write_output({trace, "--trace", false, {{job, "the job file"}}}, "a trace");
  EXPECT_EQ(read(trace), "a trace");
  write_output({trace, "--trace", true, {{job, "the job file"}, {d.file("gone.graph.txt"), "the profile"}}}, "again");
  EXPECT_EQ(read(trace), "again");
  // A copy of the job is another file: replaced with --overwrite.
  put(d.file("copy.json"), kJob);
  write_output({d.file("copy.json"), "--trace", true, {{job, "the job file"}}}, "a trace");
  EXPECT_EQ(read(d.file("copy.json")), "a trace");
}

// An input that becomes the target between the check and the rename (a
// stream written for minutes) is not replaced either.
TEST(OutputInputs, AnInputMovedOntoTheTargetMeanwhileIsKept) {
  test::TempDir d("pw-output-inputs");
  const std::string job = d.file("job.json"), trace = d.file("trace.json");
  put(job, kJob);
  OutputStream s({trace, "--trace", true, {{job, "the job file"}}});
  s.stream() << "a trace";
  fs::create_hard_link(job, trace);
  EXPECT_FALSE(refusal([&] { s.commit(); }).empty());
  EXPECT_EQ(read(job), kJob);
  EXPECT_EQ(read(trace), kJob);
}

TEST(OutputInputs, RefuseInputNamesTheRole) {
  test::TempDir d("pw-output-inputs");
  put(d.file("graph.txt"), "layers");
  std::string why = refusal([&] { refuse_input(d.file("graph.txt"), "--run-dir", {{d.file("graph.txt"), "the profile"}}); });
  EXPECT_NE(why.find("is the profile this command reads"), std::string::npos) << why;
  EXPECT_TRUE(refusal([&] { refuse_input(d.file("absent"), "--run-dir", {{d.file("graph.txt"), "the profile"}}); }).empty());
}

// User TorchScript models (issue 11). The models are scripted and saved by
// Debian's python3-torch at test time (make_models.py), trained by the
// engine in 1, 2 and 4 stages, and the trained file is loaded back in
// Python. Without python3-torch every test fails, naming the package:
// scripts/test installs it, so its absence is a broken set-up, and a pass
// or a skip would hide that nothing was tested.
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/job/job_plan.h"
#include "core/spec/spec_error.h"
#include "runtime/coordinator.h"
#include "runtime/stage.h"
#include "runtime/torchscript/torchscript_model.h"

namespace pw::rt {
namespace {
namespace fs = std::filesystem;

std::string g_python;  // interpreter with torch; empty when absent
std::string g_dir;     // models and tensors written by make_models.py

int sh(const std::string& cmd) { return std::system(cmd.c_str()); }
std::string file(const std::string& name) { return g_dir + "/" + name; }

class TorchScript : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Debian's interpreter first: a pyenv or venv python3 on PATH lacks the
    // system's torch.
    std::vector<std::string> candidates{"/usr/bin/python3", "python3"};
    if (const char* p = std::getenv("PW_TORCHSCRIPT_PYTHON")) candidates = {p};
    for (const auto& py : candidates)
      if (sh(py + " -c 'import torch' >/dev/null 2>&1") == 0) {
        g_python = py;
        break;
      }
    if (g_python.empty()) return;
    g_dir = (fs::temp_directory_path() / ("pw-torchscript-" + std::to_string(::getpid()))).string();
    fs::create_directories(g_dir);
    ASSERT_EQ(sh(g_python + " " PW_TS_SCRIPT " make " + g_dir), 0) << "make_models.py failed";
  }
  static void TearDownTestSuite() {
    if (!g_dir.empty() && !std::getenv("PW_KEEP_TEST_FILES")) fs::remove_all(g_dir);
  }
  void SetUp() override {
    // scripts/test installs python3-torch, so its absence is a broken set-up,
    // not a reason to pass without testing anything.
    if (g_python.empty()) GTEST_FAIL() << "python3-torch is absent (apt-get install python3-torch): no way to script test models";
  }
};

nlohmann::json job_doc(const std::string& model, int stages, const std::string& schedule = "1f1b",
                       std::vector<int> shape = {4, 4}, int classes = 4,
                       nlohmann::json data = {{"kind", "synthetic"}, {"samples", 256}}) {
  return {{"name", "torchscript-test"},
          {"model", {{"kind", "torchscript"}, {"path", model}, {"input", {{"shape", shape}}}, {"classes", classes}}},
          {"data", data},
          {"training",
           {{"optimizer", "sgd"}, {"lr", 0.1}, {"batch_size", 16}, {"microbatch_size", 4}, {"iterations", 4},
            {"seed", 5}}},
          {"cluster", {{"devices", stages}, {"device", "custom"}, {"memory_gb", 1}, {"tflops", 0.05}}},
          {"pipeline", {{"stages", stages}, {"schedule", schedule}}}};
}

std::string spec_error_path(nlohmann::json doc) {
  try {
    parse_job(doc);
  } catch (const SpecError& e) {
    return e.path();
  }
  return "(accepted)";
}

// The job spec needs no Python: runs everywhere.
TEST(TorchScriptSpec, FieldsAreValidatedWithTheirPaths) {
  auto doc = job_doc("m.pt", 1);
  EXPECT_EQ(parse_job(doc).model.input_shape, (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(parse_job(doc).model.input_dtype, "float32");
  auto d = doc;
  d["model"].erase("path");
  EXPECT_EQ(spec_error_path(d), "model.path");
  d = doc;
  d["model"]["input"].erase("shape");
  EXPECT_EQ(spec_error_path(d), "model.input.shape");
  d = doc;
  d["model"]["input"]["shape"] = {4, 0};
  EXPECT_EQ(spec_error_path(d), "model.input.shape[1]");
  d = doc;
  d["model"]["input"]["dtype"] = "float16";
  EXPECT_EQ(spec_error_path(d), "model.input.dtype");
  d = doc;
  d["model"]["inputs"] = 3;
  EXPECT_EQ(spec_error_path(d), "model.inputs");
}

TEST(TorchScriptSpec, PathsAreRelativeToTheJobFileAndPlanningWithoutAProfileSaysWhatToDo) {
  auto dir = fs::temp_directory_path() / ("pw-ts-spec-" + std::to_string(::getpid()));
  fs::create_directories(dir / "jobs");
  auto doc = job_doc("../models/m.pt", 1, "1f1b", {4, 4}, 4, {{"kind", "tensors"}, {"path", "data.pt"}});
  std::ofstream(dir / "jobs" / "job.json") << doc.dump();
  JobSpec job = load_job((dir / "jobs" / "job.json").string());
  fs::remove_all(dir);
  EXPECT_EQ(job.model.path, (dir / "models" / "m.pt").string());
  EXPECT_EQ(job.raw["model"]["path"], job.model.path);  // workers parse job.raw
  EXPECT_EQ(job.raw["data"]["path"], (dir / "jobs" / "data.pt").string());
  try {
    job_profile(job);
    FAIL() << "a torchscript job planned without a profile";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "model.profile");
    EXPECT_NE(std::string(e.what()).find("pipewright profile"), std::string::npos) << e.what();
  }
}

std::string refusal(const std::string& path) {
  try {
    torchscript_children(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST_F(TorchScript, ListsChildrenOfASequentialWithParameterCounts) {
  auto kids = torchscript_children(file("seq.pt"));
  ASSERT_EQ(kids.size(), 8u);
  const std::vector<std::string> types{"Flatten", "Linear", "ReLU", "Linear", "Tanh", "Linear", "ReLU", "Linear"};
  const std::vector<std::int64_t> params{0, 16 * 24 + 24, 0, 24 * 24 + 24, 0, 24 * 12 + 12, 0, 12 * 4 + 4};
  for (size_t i = 0; i < kids.size(); ++i) {
    EXPECT_EQ(kids[i].name, std::to_string(i));
    EXPECT_EQ(kids[i].type, types[i]);
    EXPECT_EQ(kids[i].params, params[i]) << kids[i].name;
  }
}

TEST_F(TorchScript, TakesChildrenInCallOrderNotDeclarationOrder) {
  auto kids = torchscript_children(file("chain.pt"));
  ASSERT_EQ(kids.size(), 3u);
  EXPECT_EQ(kids[0].name, "flat");
  EXPECT_EQ(kids[1].name, "body");
  EXPECT_EQ(kids[2].name, "head");
}

TEST_F(TorchScript, RefusesNonSequentialModelsNamingTheChild) {
  std::string residual = refusal(file("residual.pt"));
  EXPECT_NE(residual.find("not a sequential model"), std::string::npos) << residual;
  EXPECT_NE(residual.find("aten::add"), std::string::npos) << residual;
  EXPECT_NE(residual.find("child 'block'"), std::string::npos) << residual;
  std::string unused = refusal(file("unused.pt"));
  EXPECT_NE(unused.find("child 'spare' (Linear) is never called"), std::string::npos) << unused;
  std::string twice = refusal(file("twice.pt"));
  EXPECT_NE(twice.find("child 'square' is called more than once"), std::string::npos) << twice;
  // The engine reports the same through the job spec field.
  auto job = parse_job(job_doc(file("residual.pt"), 1));
  try {
    load_torchscript_layers(job);
    FAIL() << "a residual model was accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "model.path");
    EXPECT_NE(std::string(e.what()).find("child 'block'"), std::string::npos) << e.what();
  }
}

TEST_F(TorchScript, RefusesFilesThatAreNotTorchScript) {
  std::ofstream(file("junk.pt")) << "not a zip";
  EXPECT_NE(refusal(file("junk.pt")).find("not a TorchScript file"), std::string::npos);
  EXPECT_NE(refusal(file("missing.pt")).find("no such file"), std::string::npos);
}

TEST_F(TorchScript, LayersComputeWhatTheWholeModuleComputes) {
  auto job = parse_job(job_doc(file("seq.pt"), 1));
  auto layers = load_torchscript_layers(job);
  ASSERT_EQ(layers.size(), 8u);
  auto whole = torch::jit::load(file("seq.pt"));
  auto x = at::randn({3, 4, 4});
  at::Tensor y = x;
  for (auto& l : layers) y = l->forward(y);
  at::Tensor want = whole.forward(std::vector<c10::IValue>{x}).toTensor();
  EXPECT_TRUE(at::allclose(y, want, 1e-6, 1e-7));
  EXPECT_EQ(torchscript_input_shape(job), (std::vector<int64_t>{4, 4, 4}));
}

TEST_F(TorchScript, BadInputShapeOrClassesNameTheFieldAndChild) {
  try {
    load_torchscript_layers(parse_job(job_doc(file("seq.pt"), 1, "1f1b", {5, 3})));
    FAIL() << "a wrong input shape was accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "model.input.shape");
    EXPECT_NE(std::string(e.what()).find("child '1'"), std::string::npos) << e.what();
  }
  try {
    load_torchscript_layers(parse_job(job_doc(file("seq.pt"), 1, "1f1b", {4, 4}, 10)));
    FAIL() << "a wrong class count was accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "model.classes");
  }
}

TEST_F(TorchScript, OptimizerStepsReachTheSavedFile) {
  auto job = parse_job(job_doc(file("seq.pt"), 1));
  auto layers = load_torchscript_layers(job);
  std::vector<at::Tensor> params;
  for (auto& l : layers)
    for (auto& p : l->parameters()) params.push_back(p);
  ASSERT_EQ(params.size(), 8u);  // 4 Linear layers, weight and bias each
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.5));
  at::Tensor y = at::randn({6, 4, 4});
  for (auto& l : layers) y = l->forward(y);
  torch::nn::functional::cross_entropy(y, at::zeros({6}, at::kLong)).backward();
  opt.step();
  save_torchscript(job, layers, file("stepped.pt"));
  auto before = torch::jit::load(file("seq.pt"));
  auto after = torch::jit::load(file("stepped.pt"));
  size_t i = 0;
  for (const auto& p : after.named_parameters()) {
    EXPECT_TRUE(at::equal(p.value, params[i])) << p.name;
    EXPECT_FALSE(at::equal(p.value, before.attr(p.name.substr(0, 1)).toModule().attr(p.name.substr(2)).toTensor()))
        << p.name << " did not change";
    ++i;
  }
  EXPECT_EQ(i, params.size());
}

TEST_F(TorchScript, ReadsTensorsSavedByTorchSave) {
  TensorData d = load_tensor_file(file("data.pt"));
  EXPECT_EQ(d.inputs.sizes(), (c10::IntArrayRef{256, 4, 4}));
  EXPECT_EQ(d.labels.sizes(), (c10::IntArrayRef{256}));
  EXPECT_EQ(d.labels.scalar_type(), at::kLong);
  ASSERT_TRUE(d.test_inputs.defined());
  EXPECT_TRUE(at::equal(d.test_inputs, d.inputs.narrow(0, 0, 32)));
  EXPECT_THROW(load_tensor_file(file("seq.pt")), std::runtime_error);
}

// Runs the job in a pipeline of `stages` worker processes on the tensors
// Python saved; the run directory holds weights/stage<r>.pt and the
// exported model.pt.
// `policies`: run the planner's partition with these memory policies.
std::string train(const std::string& model, int stages, const std::string& schedule,
                  const std::vector<MemoryPolicy>& policies = {}, const nlohmann::json* doc = nullptr) {
  std::string dir = file("run-" + fs::path(model).stem().string() + "-" + std::to_string(stages) + "-" + schedule +
                         (policies.empty() ? "" : "-policies"));
  RunOptions o;
  o.job = parse_job(doc ? *doc
                        : job_doc(model, stages, schedule, {4, 4}, 4, {{"kind", "tensors"}, {"path", file("data.pt")}}));
  if (!policies.empty()) {
    JobSpec measured = o.job;
    measured.model.profile = file("run-seq-1-1f1b/profile.json");
    Plan plan = prepare_job(measured).plan;
    plan.policy = policies;
    o.plan = plan;
  }
  o.run_dir = dir;
  o.worker_binary = PW_WORKER_BIN;
  o.threads_per_worker = 1;
  o.eval = true;  // on the file's test_inputs/test_labels
  RunResult r = run_job(o);
  EXPECT_EQ(r.exit_code, 0) << r.error;
  EXPECT_GE(r.accuracy, 0.0);
  EXPECT_LE(r.accuracy, 1.0);
  EXPECT_TRUE(fs::exists(dir + "/profile.json")) << "the run did not profile the model";
  return dir;
}

std::vector<at::Tensor> saved_params(const std::string& path) {
  std::vector<at::Tensor> out;
  for (const auto& p : torch::jit::load(path).named_parameters()) out.push_back(p.value);
  return out;
}

// The test model's forward, written out: flatten, then Linear/ReLU/Linear/
// Tanh/Linear/ReLU/Linear on weights given in model order.
at::Tensor by_hand(const std::vector<at::Tensor>& w, const at::Tensor& x) {
  at::Tensor h = x.reshape({x.size(0), -1});
  h = at::relu(at::linear(h, w[0], w[1]));
  h = at::tanh(at::linear(h, w[2], w[3]));
  h = at::relu(at::linear(h, w[4], w[5]));
  return at::linear(h, w[6], w[7]);
}

TEST_F(TorchScript, TrainsInTwoAndFourStagesToTheWeightsOfOneAndLoadsBackInPython) {
  std::string one = train(file("seq.pt"), 1, "1f1b");
  std::string two = train(file("seq.pt"), 2, "1f1b");
  std::string four = train(file("seq.pt"), 4, "gpipe");
  using P = MemoryPolicy;
  std::string mixed = train(file("seq.pt"), 2, "1f1b",
                            {P::Swap, P::Recompute, P::Keep, P::Recompute, P::Swap, P::Keep, P::Recompute, P::Swap});
  auto w1 = saved_params(one + "/model.pt"), w2 = saved_params(two + "/model.pt"),
       w4 = saved_params(four + "/model.pt"), wm = saved_params(mixed + "/model.pt"),
       w0 = saved_params(file("seq.pt"));
  ASSERT_EQ(w1.size(), 8u);
  ASSERT_EQ(w2.size(), 8u);
  ASSERT_EQ(w4.size(), 8u);
  ASSERT_EQ(wm.size(), 8u);
  for (size_t i = 0; i < w1.size(); ++i) {
    double scale = w1[i].abs().max().item<double>();
    EXPECT_LE((w2[i] - w1[i]).abs().max().item<double>(), 1e-6 * scale) << "2 stages, parameter " << i;
    EXPECT_LE((w4[i] - w1[i]).abs().max().item<double>(), 1e-6 * scale) << "4 stages, parameter " << i;
    EXPECT_LE((wm[i] - w1[i]).abs().max().item<double>(), 1e-6 * scale) << "recompute/swap, parameter " << i;
    EXPECT_GT((w1[i] - w0[i]).abs().max().item<double>(), 1e-4) << "parameter " << i << " did not train";
  }
  // What the 4-stage workers held at the end, gathered by hand from their
  // stage files, must be what the exported file computes in Python.
  std::vector<at::Tensor> held;
  for (int s = 0; s < 4; ++s) {
    auto w = load_stage_parameters(four + "/weights/stage" + std::to_string(s) + ".pt");
    held.insert(held.end(), w.begin(), w.end());
  }
  ASSERT_EQ(held.size(), 8u);
  at::Tensor probe = load_tensor_file(file("probe.pt")).inputs;
  at::Tensor out = by_hand(held, probe);
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t i = 0; i < out.size(0); ++i) {
    std::vector<double> row;
    for (int64_t j = 0; j < out.size(1); ++j) row.push_back(out[i][j].item<double>());
    rows.push_back(row);
  }
  std::ofstream(file("cpp_outputs.json")) << rows.dump();
  fs::copy_file(four + "/model.pt", file("trained.pt"), fs::copy_options::overwrite_existing);
  EXPECT_EQ(sh(g_python + " " PW_TS_SCRIPT " check " + g_dir), 0)
      << "the trained model, loaded in Python, does not compute what the pipeline trained";
}

// PipeDream's asynchronous 1F1B trains it too (other numbers by design:
// stale weights), and its export is a model Python can load.
TEST_F(TorchScript, TrainsUnderAsyncPipeDreamAndExports) {
  std::string dir = train(file("seq.pt"), 2, "pipedream");
  auto trained = saved_params(dir + "/model.pt"), initial = saved_params(file("seq.pt"));
  ASSERT_EQ(trained.size(), initial.size());
  double moved = 0;
  for (size_t i = 0; i < trained.size(); ++i)
    moved = std::max(moved, (trained[i] - initial[i]).abs().max().item<double>());
  EXPECT_GT(moved, 1e-4) << "the exported weights did not train";
}

std::map<std::string, at::Tensor> saved_buffers(const std::string& path) {
  std::map<std::string, at::Tensor> out;
  for (const auto& b : torch::jit::load(path).named_buffers()) out[b.name] = b.value;
  return out;
}

// Batch-norm running statistics are trained state: the exported model
// carries them, the same whichever stage held the layer.
TEST_F(TorchScript, BatchNormRunningStatisticsReachTheExportedModel) {
  auto one = saved_buffers(train(file("bn.pt"), 1, "1f1b") + "/model.pt");
  auto two = saved_buffers(train(file("bn.pt"), 2, "1f1b") + "/model.pt");
  auto initial = saved_buffers(file("bn.pt"));
  for (const char* name : {"2.running_mean", "2.running_var"}) {
    ASSERT_TRUE(one.count(name) && two.count(name) && initial.count(name)) << name;
    EXPECT_GT((one[name] - initial[name]).abs().max().item<double>(), 1e-3) << name << " was not exported";
    EXPECT_LE((two[name] - one[name]).abs().max().item<double>(), 1e-6) << name << ": 2 stages differ from 1";
  }
  EXPECT_EQ(one["2.num_batches_tracked"].item<std::int64_t>(), two["2.num_batches_tracked"].item<std::int64_t>());
  EXPECT_GT(one["2.num_batches_tracked"].item<std::int64_t>(), 0);
}

TEST_F(TorchScript, ALanguageModelOnTextTrainsInTwoStagesAsInOne) {
  auto doc = [](int stages) {
    auto d = job_doc(file("lm.pt"), stages, "1f1b", {16}, 256, {{"kind", "text"}, {"test_samples", 8}});
    d["model"]["input"]["dtype"] = "int64";
    d["training"]["iterations"] = 2;
    d["training"]["batch_size"] = 8;
    return d;
  };
  auto d1 = doc(1), d2 = doc(2);
  auto w1 = saved_params(train(file("lm.pt"), 1, "1f1b", {}, &d1) + "/model.pt");
  auto w2 = saved_params(train(file("lm.pt"), 2, "1f1b", {}, &d2) + "/model.pt");
  ASSERT_EQ(w1.size(), 5u);  // embedding, two Linear layers
  for (size_t i = 0; i < w1.size(); ++i)
    EXPECT_LE((w2[i] - w1[i]).abs().max().item<double>(), 1e-6 * w1[i].abs().max().item<double>()) << i;
  // Synthetic float data cannot feed an embedding: refused when the job is
  // read (the core checks data against the model), before any worker starts.
  auto bad = doc(1);
  bad["data"] = {{"kind", "synthetic"}};
  EXPECT_THROW(parse_job(bad), SpecError);
}

}  // namespace
}  // namespace pw::rt

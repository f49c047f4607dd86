#include "runtime/torchscript/torchscript_model.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/serialize/input-archive.h>
#include <torch/utils.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "core/model/profile_io.h"
#include "core/schedule/schedule.h"
#include "core/spec/spec_error.h"
#include "core/io/checked_write.h"
#include "runtime/profiler.h"

namespace pw::rt {
namespace {

namespace jit = torch::jit;

// c10 errors append a C++ backtrace; users need the first lines.
std::string short_what(const std::exception& e) {
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

std::string short_type(const jit::Module& m) {
  std::string q = m.type()->name() ? m.type()->name()->qualifiedName() : "?";
  auto dot = q.rfind('.');
  return dot == std::string::npos ? q : q.substr(dot + 1);
}

std::string q(const std::string& s) { return "'" + s + "'"; }

std::string source_of(const jit::Node* n) {
  auto flc = n->sourceRange().file_line_col();
  if (!flc) return "";
  return " at " + std::filesystem::path(std::get<0>(*flc)).filename().string() + ":" +
         std::to_string(std::get<1>(*flc));
}

// The chain check. Why a graph walk and not "is it an nn.Sequential": any
// module whose forward is `return c(b(a(x)))` pipelines the same way, and a
// Sequential subclass with an overridden forward does not. The walk
// accepts exactly: constants, reads of child attributes, and calls of each
// child's forward once, on the previous call's output, the last call's
// output being what forward returns. Anything else would be work outside
// every layer, which the pipeline would silently drop.
std::vector<std::string> chain_of_children(const jit::Module& root, const std::string& path) {
  auto fail = [&](const std::string& why) -> std::runtime_error {
    return std::runtime_error(path + ": not a sequential model: " + why +
                              ". Pipewright trains a module whose top-level children run one after another, each "
                              "on the previous one's output (an nn.Sequential); see docs/torchscript.md");
  };
  std::set<std::string> kids;
  for (const auto& c : root.named_children()) kids.insert(c.name);
  if (kids.empty()) throw fail("the module has no child modules, so there are no layers to pipeline");
  auto method = root.find_method("forward");
  if (!method) throw fail("the module has no forward method");
  const auto& g = *method->graph();
  if (g.inputs().size() != 2)
    throw fail("forward takes " + std::to_string(g.inputs().size() - 1) +
               " arguments; a pipeline passes one tensor from layer to layer");
  const jit::Value* self = g.inputs()[0];
  const jit::Value* cur = g.inputs()[1];
  std::string prev = "the model's input";
  std::map<const jit::Value*, std::string> child_at;
  std::map<const jit::Value*, std::string> output_of;  // value -> child that produced it
  std::vector<std::string> order;
  std::set<std::string> called;
  auto next_call = [&](const jit::Node* from) -> std::string {
    for (const jit::Node* n = from->next(); n != g.return_node(); n = n->next())
      if (n->kind() == c10::prim::CallMethod && child_at.count(n->inputs()[0]))
        return "before child " + q(child_at[n->inputs()[0]]);
    return "after the last child";
  };
  for (const jit::Node* n : g.nodes())
    if (n->kind() == c10::prim::GetAttr && n->input() == self && kids.count(n->s(c10::attr::name)))
      child_at[n->output()] = n->s(c10::attr::name);
  for (const jit::Node* n : g.nodes()) {
    if (n->kind() == c10::prim::Constant) continue;
    if (n->kind() == c10::prim::GetAttr && n->input() == self) {
      if (kids.count(n->s(c10::attr::name))) continue;
    }
    if (n->kind() == c10::prim::CallMethod && child_at.count(n->inputs()[0])) {
      const std::string& name = child_at[n->inputs()[0]];
      if (n->s(c10::attr::name) != "forward")
        throw fail("child " + q(name) + ": forward calls its method " + n->s(c10::attr::name) +
                   "; only a child's forward can be a layer");
      if (called.count(name)) throw fail("child " + q(name) + " is called more than once in forward");
      if (n->inputs().size() != 2 || n->inputs()[1] != cur)
        throw fail("child " + q(name) + " is not called on the output of " + prev +
                   " (alone, as its only argument)" + source_of(n));
      if (n->outputs().size() != 1 || n->output()->type()->kind() != c10::TypeKind::TensorType)
        throw fail("child " + q(name) + " returns " + n->output()->type()->str() + ", not one tensor");
      called.insert(name);
      order.push_back(name);
      cur = n->output();
      output_of[cur] = name;
      prev = "child " + q(name);
      continue;
    }
    // Work outside the children: name the child whose output it uses.
    std::string on;
    for (const jit::Value* v : n->inputs())
      if (output_of.count(v)) on = " on the output of child " + q(output_of[v]);
    if (on.empty())
      for (const jit::Value* v : n->inputs())
        if (v == g.inputs()[1]) on = " on the model's input";
    std::string op = n->kind().toQualString();
    if (n->kind() == c10::prim::GetAttr) op = "self." + n->s(c10::attr::name) + " (not a child module)";
    throw fail("forward runs " + op + source_of(n) + on + ", " + next_call(n) +
               ", outside any child; move that computation into a child module (e.g. nn.Flatten, or a small "
               "nn.Module of your own)");
  }
  if (g.outputs().size() != 1 || g.outputs()[0] != cur)
    throw fail("forward does not return the output of " + prev);
  for (const auto& c : root.named_children())
    if (!called.count(c.name))
      throw fail("child " + q(c.name) + " (" + short_type(c.value) +
                 ") is never called by forward; remove it from the module or call it in the chain");
  for (const auto& p : root.named_parameters(false))
    throw fail("parameter " + q(p.name) + " belongs to the top-level module, outside every child");
  return order;
}

std::string safe_name(std::string s) {
  for (char& c : s)
    if (c == '.') c = '_';
  return s;
}

std::vector<torch::nn::Sequential> wrap(const TorchScriptModel& m) {
  std::vector<torch::nn::Sequential> out;
  for (const auto& name : m.children) {
    jit::Module child = m.root.attr(name).toModule();
    torch::nn::Sequential s;
    s->push_back(std::string(name), TorchScriptLayer(child, short_type(child)));
    out.push_back(s);
  }
  return out;
}

// Copies `from` into the tensors the fresh model's layers hold, in place.
void assign(std::vector<at::Tensor> to, const std::vector<at::Tensor>& from, const std::string& what) {
  if (to.size() != from.size())
    throw std::runtime_error(what + ": " + std::to_string(from.size()) + " tensors for " + std::to_string(to.size()));
  torch::NoGradGuard ng;
  for (size_t i = 0; i < to.size(); ++i) {
    if (!to[i].sizes().equals(from[i].sizes()))
      throw std::runtime_error(what + ": tensor " + std::to_string(i) + " has shape " + c10::str(from[i].sizes()) +
                               ", the model's has " + c10::str(to[i].sizes()));
    to[i].copy_(from[i]);
  }
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TorchScriptLayerImpl::TorchScriptLayerImpl(torch::jit::Module child, std::string type)
    : child_(std::move(child)), type_(std::move(type)) {
  for (const auto& p : child_.named_parameters(true))
    register_parameter(safe_name(p.name), p.value, p.value.requires_grad());
  for (const auto& b : child_.named_buffers(true)) register_buffer(safe_name(b.name), b.value);
}

at::Tensor TorchScriptLayerImpl::forward(const at::Tensor& x) {
  at::Tensor y = child_.forward(std::vector<c10::IValue>{x}).toTensor();
  // A parameter-free child on the model's input (nn.Flatten first) yields a
  // tensor outside autograd, yet the executor and the profiler run backward
  // from every layer's output: make it a leaf, so that backward is a no-op.
  if (at::GradMode::is_enabled() && !y.requires_grad() && at::isFloatingType(y.scalar_type()))
    y.requires_grad_(true);
  return y;
}

std::shared_ptr<torch::nn::Module> TorchScriptLayerImpl::clone(const c10::optional<torch::Device>& device) const {
  torch::jit::Module copy = child_.deepcopy();
  if (device) copy.to(*device);
  auto out = std::make_shared<TorchScriptLayerImpl>(std::move(copy), type_);
  out->train(is_training());
  return out;
}

void TorchScriptLayerImpl::train(bool on) {
  torch::nn::Module::train(on);
  child_.train(on);
}

TorchScriptModel load_torchscript_model(const std::string& path) {
  if (!std::filesystem::exists(path)) throw std::runtime_error(path + ": no such file");
  TorchScriptModel m;
  try {
    m.root = jit::load(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not a TorchScript file (save it with torch.jit.save(torch.jit.script(model), "
                                    "path)): " + short_what(e));
  }
  m.children = chain_of_children(m.root, path);
  return m;
}

std::vector<TorchScriptChild> torchscript_children(const std::string& path) {
  TorchScriptModel m = load_torchscript_model(path);
  std::vector<TorchScriptChild> out;
  for (const auto& name : m.children) {
    jit::Module c = m.root.attr(name).toModule();
    TorchScriptChild info{name, short_type(c), 0};
    for (const auto& p : c.parameters(true)) info.params += p.numel();
    out.push_back(info);
  }
  return out;
}

std::vector<LayerProfile> torchscript_layer_names(const JobSpec& job) {
  std::vector<LayerProfile> out;
  for (const auto& c : torchscript_children(job.model.path)) {
    LayerProfile l;
    l.name = c.name;
    l.type = c.type;
    out.push_back(l);
  }
  return out;
}

void ensure_torchscript_profile(JobSpec& job, const std::string& run_dir) {
  if (job.model.kind != "torchscript" || !job.model.profile.empty()) return;
  namespace fs = std::filesystem;
  fs::path file = run_dir.empty() ? fs::temp_directory_path() / ("pw-torchscript-profile-" +
                                                                  std::to_string(::getpid()) + ".json")
                                  : fs::path(run_dir) / "profile.json";
  if (!run_dir.empty()) fs::create_directories(run_dir);
  save_profile_file(measure_profile(job), file.string());
  job.model.profile = file.string();
}

std::vector<int64_t> torchscript_input_shape(const JobSpec& job) {
  std::vector<int64_t> s{job.training.microbatch_size};
  s.insert(s.end(), job.model.input_shape.begin(), job.model.input_shape.end());
  return s;
}

at::TensorOptions torchscript_input_options(const JobSpec& job) {
  return at::TensorOptions().dtype(job.model.input_dtype == "int64" ? at::kLong : at::kFloat);
}

std::vector<torch::nn::Sequential> load_torchscript_layers(const JobSpec& job) {
  TorchScriptModel m;
  try {
    m = load_torchscript_model(job.model.path);
  } catch (const std::runtime_error& e) {
    throw SpecError("model.path", e.what());
  }
  auto layers = wrap(m);
  // A zero batch through the children, in eval mode so batch-norm running
  // statistics are not touched, finds a wrong input shape before training.
  torch::NoGradGuard ng;
  m.root.eval();
  auto shape = torchscript_input_shape(job);
  shape[0] = std::min<int64_t>(shape[0], 2);
  at::Tensor x = at::zeros(shape, torchscript_input_options(job));
  for (size_t l = 0; l < layers.size(); ++l) {
    std::string in = c10::str(x.sizes());
    try {
      x = layers[l]->forward(x);
    } catch (const std::exception& e) {
      m.root.train();
      throw SpecError("model.input.shape", "child " + q(m.children[l]) + " (layer " + std::to_string(l) +
                                               ") fails on input " + in + ": " + short_what(e));
    }
  }
  m.root.train();
  // Logits per sample, or per token ([batch, seq, classes]) for int64 input.
  bool per_token = x.dim() == 3 && job.model.input_dtype == "int64";
  if ((x.dim() != 2 && !per_token) || x.size(-1) != job.model.classes)
    throw SpecError("model.classes", "the model's output is " + c10::str(x.sizes()) + " for input " +
                                         c10::str(shape) + "; the engine trains with cross-entropy on [batch, " +
                                         std::to_string(job.model.classes) + "] logits (model.classes)");
  return layers;
}

// In memory, then through the checked writer: libtorch's file writer aborts
// the process when a write fails (a full disk), instead of throwing.
void save_torchscript_module(const torch::jit::Module& m, const std::string& out) {
  std::ostringstream bytes;
  m.save(bytes);
  write_file_atomically(out, bytes.view(), "TorchScript model");
}

void save_torchscript(const JobSpec& job, const std::vector<torch::nn::Sequential>& layers, const std::string& out) {
  TorchScriptModel fresh = load_torchscript_model(job.model.path);
  auto target = wrap(fresh);
  if (target.size() != layers.size())
    throw std::runtime_error("save_torchscript: " + std::to_string(layers.size()) + " layers for a model of " +
                             std::to_string(target.size()));
  for (size_t l = 0; l < layers.size(); ++l) {
    std::string what = "layer " + std::to_string(l) + " (" + fresh.children[l] + ")";
    assign(target[l]->parameters(), layers[l]->parameters(), what + " parameters");
    assign(target[l]->buffers(), layers[l]->buffers(), what + " buffers");
  }
  save_torchscript_module(fresh.root, out);
}

void export_trained_torchscript(const JobSpec& job, const Plan& plan, int devices, const std::string& weights_dir,
                                const std::string& out) {
  TorchScriptModel fresh = load_torchscript_model(job.model.path);
  auto target = wrap(fresh);
  if (plan.layer_count() != static_cast<int>(target.size()))
    throw std::runtime_error("the plan covers " + std::to_string(plan.layer_count()) + " layers, the model has " +
                             std::to_string(target.size()));
  // Where each virtual stage ran is the schedule's to say (a V folds the model back).
  auto sched = make_schedule(job.pipeline.schedule, job.pipeline.stages, job.pipeline.microbatches, job.pipeline.chunks);
  for (int r = 0; r < devices; ++r) {
    std::string file = (std::filesystem::path(weights_dir) / ("stage" + std::to_string(r) + ".pt")).string();
    torch::serialize::InputArchive a;
    a.load_from(file);
    // As StageExecutor::save writes them: "p<i>" parameters and "b<i>"
    // buffers (running statistics), each in layer order.
    std::vector<at::Tensor> mine, saved, my_buffers, saved_buffers;
    for (int l = 0; l < static_cast<int>(target.size()); ++l)
      if (sched->device_of_virtual_stage(plan.stage_of(l)) == r) {
        for (auto& p : target[l]->parameters()) mine.push_back(p);
        for (auto& b : target[l]->buffers()) my_buffers.push_back(b);
      }
    for (size_t i = 0; i < mine.size(); ++i) {
      at::Tensor t;
      a.read("p" + std::to_string(i), t);
      saved.push_back(t);
    }
    assign(mine, saved, file);
    for (size_t i = 0; i < my_buffers.size(); ++i) {
      at::Tensor t;
      if (!a.try_read("b" + std::to_string(i), t)) break;  // weights saved before buffers were
      saved_buffers.push_back(t);
    }
    if (saved_buffers.size() == my_buffers.size()) assign(my_buffers, saved_buffers, file + " buffers");
  }
  save_torchscript_module(fresh.root, out);
}

TensorData load_tensor_file(const std::string& path) {
  c10::IValue v;
  try {
    v = jit::pickle_load(read_bytes(path));
  } catch (const c10::Error& e) {
    throw std::runtime_error(path + ": not a file written by torch.save: " + short_what(e));
  }
  TensorData d;
  auto tensor = [&](const c10::IValue& x, const std::string& key) {
    if (!x.isTensor()) throw std::runtime_error(path + ": " + key + " is " + x.tagKind() + ", not a tensor");
    return x.toTensor();
  };
  if (v.isGenericDict()) {
    auto dict = v.toGenericDict();
    auto get = [&](const std::string& key, bool required) -> at::Tensor {
      auto it = dict.find(key);
      if (it == dict.end()) {
        if (required) throw std::runtime_error(path + ": the dict has no \"" + key + "\" tensor");
        return {};
      }
      return tensor(it->value(), "\"" + key + "\"");
    };
    d.inputs = get("inputs", true);
    d.labels = get("labels", true);
    d.test_inputs = get("test_inputs", false);
    d.test_labels = get("test_labels", false);
    if (d.test_inputs.defined() != d.test_labels.defined())
      throw std::runtime_error(path + ": \"test_inputs\" and \"test_labels\" come together");
  } else if (v.isTuple() && v.toTupleRef().elements().size() == 2) {
    d.inputs = tensor(v.toTupleRef().elements()[0], "element 0 (inputs)");
    d.labels = tensor(v.toTupleRef().elements()[1], "element 1 (labels)");
  } else {
    throw std::runtime_error(path + ": expected a dict {\"inputs\": ..., \"labels\": ...} or a tuple (inputs, "
                                    "labels), got " + std::string(v.tagKind()));
  }
  auto check = [&](at::Tensor& x, at::Tensor& y, const std::string& what) {
    if (!x.defined()) return;
    // Token inputs [N, seq] may carry a label per token (a language model's next tokens).
    bool per_token = y.dim() == 2 && x.dim() == 2 && !at::isFloatingType(x.scalar_type()) && y.size(1) == x.size(1);
    if ((y.dim() != 1 && !per_token) || y.size(0) != x.size(0))
      throw std::runtime_error(path + ": " + what + " labels must be one class id per input row (or per token of " +
                               "int64 [N, seq] inputs): " + c10::str(y.sizes()) + " labels for inputs " +
                               c10::str(x.sizes()));
    if (at::isFloatingType(y.scalar_type()))
      throw std::runtime_error(path + ": " + what + " labels must be integer class ids, got " +
                               c10::toString(y.scalar_type()));
    y = y.to(at::kLong).contiguous();
    // float64 from numpy is the usual mistake; layers take float32.
    x = (at::isFloatingType(x.scalar_type()) ? x.to(at::kFloat) : x.to(at::kLong)).contiguous();
  };
  check(d.inputs, d.labels, "training");
  check(d.test_inputs, d.test_labels, "test");
  return d;
}

}  // namespace pw::rt

#include "core/spec/job_spec.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "core/cluster/topology.h"
#include "core/cluster/transport_choice.h"
#include "core/spec/bounded_json.h"
#include "core/spec/job_fields.h"
#include "core/spec/model_fields.h"
#include "core/spec/json_fields.h"
#include "core/spec/override.h"
#include "core/spec/spec_bounds.h"
#include "core/spec/spec_error.h"
#include "core/spec/tensor_split.h"

namespace pw {
namespace {
constexpr double GiB = 1024.0 * 1024 * 1024;

// A field of the range table (job_fields.h), read with its row's range.
template <class T>
T ranged(JsonFields& f, const std::string& key, std::optional<T> fallback = std::nullopt) {
  const FieldRange& r = job_field_range(f.path_of(key));
  return f.integer<T>(key, static_cast<T>(r.min), static_cast<T>(r.max), fallback);
}
double ranged_number(JsonFields& f, const std::string& key, std::optional<double> fallback = std::nullopt) {
  const FieldRange& r = job_field_range(f.path_of(key));
  return f.number(key, r.min, r.max, fallback);
}

// Every model field the parser took (finish() has refused the rest) has
// its row in model_fields.h, which the resume check compares by: one parsed
// without a row throws std::logic_error on any job that writes it.
void has_rows(const JsonFields& f) {
  for (const auto& [key, value] : f.raw_object().items()) model_field(f.path_of(key));
}

ModelSpec parse_model(JsonFields f) {
  using namespace bounds;
  ModelSpec m;
  m.kind = f.choice("kind", model_kind_names());
  m.profile = f.str("profile", "");
  m.profile_device = f.str("profile_device", "");
  if (!m.profile_device.empty() && !device_preset(m.profile_device))
    throw SpecError(f.path_of("profile_device"), "unknown device preset \"" + m.profile_device + "\"");
  m.precision = f.choice("precision", {"fp32", "fp16"}, "fp32");
  if (m.kind == "bert" || m.kind == "gpt" || m.kind == "transformer") {
    if (m.kind == "transformer") {
      m.encoder_layers = ranged<int>(f, "encoder_layers", 0);
      m.decoder_layers = ranged<int>(f, "decoder_layers", 0);
      if (m.encoder_layers + m.decoder_layers < 1)
        throw SpecError(f.path_of("encoder_layers"), "encoder_layers + decoder_layers must be >= 1");
      if (m.encoder_layers + m.decoder_layers > kLayers)
        throw SpecError(f.path_of("decoder_layers"), "encoder_layers + decoder_layers must be <= " + std::to_string(kLayers));
      m.layers = m.encoder_layers + m.decoder_layers;
    } else {
      m.layers = ranged<int>(f, "layers");
    }
    m.hidden = ranged<int>(f, "hidden");
    m.heads = f.integer<int>("heads", 1, m.hidden, std::max(1, m.hidden / 64));
    if (m.hidden % m.heads != 0)
      throw SpecError(f.path_of("heads"), "must divide hidden (" + std::to_string(m.hidden) + "), got " +
                                              std::to_string(m.heads));
    m.seq_len = ranged<int>(f, "seq_len");
    m.vocab = ranged<int>(f, "vocab", m.kind == "gpt" ? 50257 : 30522);
    m.ffn_mult = ranged<int>(f, "ffn_mult", 4);
  } else if (m.kind == "mlp") {
    m.input = ranged<int>(f, "input", 784);
    m.widths = f.int_list<int>("widths", 1, kHidden, kLayers);
    m.classes = ranged<int>(f, "classes", 10);
  } else if (m.kind == "cnn") {
    m.image_size = ranged<int>(f, "image_size", 28);
    m.in_channels = ranged<int>(f, "in_channels", 1);
    m.widths = f.int_list<int>("channels", 1, kHidden, kLayers);
    m.classes = ranged<int>(f, "classes", 10);
  } else if (m.kind == "profile") {
    // Everything comes from the measured profile file.
    if (m.profile.empty()) throw SpecError(f.path_of("profile"), "model.kind \"profile\" needs a profile file");
  } else if (m.kind == "torchscript") {
    // The layers are the scripted module's children (engine/runtime/torchscript).
    m.path = f.str("path");
    if (m.path.empty()) throw SpecError(f.path_of("path"), "must name a TorchScript file saved by torch.jit.save");
    JsonFields in = f.object("input");
    m.input_shape = in.int_list<std::int64_t>("shape", 1, kShapeExtent, kShapeDims);
    m.input_dtype = in.choice("dtype", {"float32", "int64"}, "float32");
    in.finish();
    has_rows(in);
    m.classes = ranged<int>(f, "classes", 10);
    // Token input of shape [seq_len]: a language model over `classes` symbols.
    if (m.input_dtype == "int64" && m.input_shape.size() == 1) {
      if (m.input_shape[0] > kSeqLen)
        throw SpecError(in.path_of("shape") + "[0]", "a token window must be <= " + std::to_string(kSeqLen) +
                                                        " (model.seq_len's bound), got " + std::to_string(m.input_shape[0]));
      m.seq_len = static_cast<int>(m.input_shape[0]);
      m.vocab = m.classes;
    }
  } else {  // uniform
    m.layers = ranged<int>(f, "layers");
    m.fwd_ms = ranged_number(f, "fwd_ms");
    m.bwd_ms = ranged_number(f, "bwd_ms");
    m.activation_mb = ranged_number(f, "activation_mb");
    m.param_mb = ranged_number(f, "param_mb", 0.0);
    m.output_mb = ranged_number(f, "output_mb", 0.0);
    m.optimizer_ms = ranged_number(f, "optimizer_ms", 0.0);
  }
  f.finish();
  has_rows(f);
  return m;
}

TrainingSpec parse_training(JsonFields f) {
  using namespace bounds;
  TrainingSpec t;
  t.optimizer = f.choice("optimizer", {"sgd", "momentum", "adam"}, "adam");
  t.lr = ranged_number(f, "lr", 1e-3);
  t.lr_schedule = f.choice("lr_schedule", {"constant", "cosine"}, "constant");
  // "auto": the planner chooses the size (core/plan/microbatch_search.h);
  // until it has, the job is one microbatch of the whole batch.
  nlohmann::json mb = f.has("microbatch_size") ? f.raw("microbatch_size") : nlohmann::json();
  t.microbatch_size_auto = mb.is_string() && mb.get<std::string>() == "auto";
  if (t.microbatch_size_auto) {
    t.batch_size = ranged<int>(f, "batch_size");
    t.microbatch_size = t.batch_size;
  } else {
    if (mb.is_string())
      throw SpecError(f.path_of("microbatch_size"), "must be an integer or \"auto\", got \"" + mb.get<std::string>() + "\"");
    t.microbatch_size = ranged<int>(f, "microbatch_size", 1);
    t.batch_size = ranged<int>(f, "batch_size", t.microbatch_size);
  }
  if (t.batch_size % t.microbatch_size != 0)
    throw SpecError(f.path_of("batch_size"), "must be a multiple of microbatch_size (" +
                                                 std::to_string(t.microbatch_size) + "), got " +
                                                 std::to_string(t.batch_size));
  t.iterations = ranged<int>(f, "iterations", 1);
  t.seed = f.integer<std::uint64_t>("seed", 0, UINT64_MAX, 0);
  t.warmup = ranged<int>(f, "warmup", 0);
  if (t.warmup >= t.iterations && t.warmup > 0)
    throw SpecError(f.path_of("warmup"), "must be less than training.iterations (" + std::to_string(t.iterations) +
                                             "), got " + std::to_string(t.warmup));
  t.clip_grad_norm = ranged_number(f, "clip_grad_norm", 0.0);
  t.skip_nonfinite = f.boolean("skip_nonfinite", false);
  f.finish();
  return t;
}

// {"2": 190, "8": 130, "32": 105}: microseconds by microbatch size, as
// `pipewright profile --in-situ` fits them at several sizes.
std::vector<std::pair<int, double>> parse_overhead_table(JsonFields f) {
  const nlohmann::json doc = f.raw_object();
  if (doc.empty()) throw SpecError(f.path(), "must be a number or a table {\"size\": us, ...} with at least one size");
  std::vector<std::pair<int, double>> table;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    int b = 0;
    std::size_t used = 0;
    try {
      b = std::stoi(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || key.empty() || b < 1 || b > bounds::kMicrobatchSize)
      throw SpecError(f.path_of(key), "the key must be a microbatch size in [1, " +
                                          std::to_string(bounds::kMicrobatchSize) + "], got \"" + key + "\"");
    table.emplace_back(b, f.number(key, 0, bounds::kMicroseconds));
  }
  std::sort(table.begin(), table.end());
  for (std::size_t i = 1; i < table.size(); ++i)
    if (table[i].first == table[i - 1].first)
      throw SpecError(f.path_of(std::to_string(table[i].first)), "microbatch size given twice");
  f.finish();
  return table;
}

ClusterSpec parse_cluster(JsonFields f) {
  using namespace bounds;
  ClusterSpec c;
  c.devices = ranged<int>(f, "devices", 1);
  c.backend = f.choice("backend", transport_backend_choices(), "auto");
  std::string preset = f.str("device", "custom");
  if (preset != "custom") {
    auto d = device_preset(preset);
    if (!d) {
      std::string names;
      for (const auto& n : device_preset_names()) names += (names.empty() ? "" : ", ") + n;
      throw SpecError(f.path_of("device"), "unknown device preset \"" + preset + "\" (known: " + names + ", custom)");
    }
    c.device = *d;
  } else {
    c.device.preset = "custom";
  }
  // Explicit fields refine a preset; a custom device needs them all.
  bool custom = preset == "custom";
  auto opt = [&](double v) { return custom ? std::optional<double>() : std::optional<double>(v); };
  double mem_gb = ranged_number(f, "memory_gb", opt(c.device.memory_bytes / GiB));
  c.device.memory_bytes = static_cast<std::uint64_t>(mem_gb * GiB);
  c.device.tflops = f.number("tflops", 1e-6, kRate, opt(c.device.tflops));
  c.device.host_link_gbps = f.number("host_link_gbps", 1e-6, kRate, custom ? 128.0 : c.device.host_link_gbps);
  c.device.link_gbps = f.number("link_gbps", 1e-6, kRate, custom ? 100.0 : c.device.link_gbps);
  c.device.link_latency_us = f.number("link_latency_us", 0, kMicroseconds, custom ? 10.0 : c.device.link_latency_us);
  c.device.mem_bandwidth_gbs = f.number("mem_bandwidth_gbs", 1e-6, kRate, custom ? 500.0 : c.device.mem_bandwidth_gbs);
  c.device.send_cpu_us = f.number("send_cpu_us", 0, kMicroseconds, c.device.send_cpu_us);
  c.device.send_cpu_gbps = f.number("send_cpu_gbps", 0, kRate, c.device.send_cpu_gbps);
  if (f.has("action_overhead_us") && f.raw("action_overhead_us").is_object())
    c.device.action_overhead_by_microbatch = parse_overhead_table(f.object("action_overhead_us"));
  else
    c.device.action_overhead_us = f.number("action_overhead_us", 0, kMicroseconds, c.device.action_overhead_us);
  c.device.small_batch_penalty = f.number("small_batch_penalty", 0, 100, c.device.small_batch_penalty);
  c.device.layer_dispatch_us = f.number("layer_dispatch_us", 0, kMicroseconds, c.device.layer_dispatch_us);
  c.device.optimizer_tensor_us = f.number("optimizer_tensor_us", 0, kMicroseconds, c.device.optimizer_tensor_us);
  NodeDefaults nodes = node_defaults(preset, c.devices, c.device.link_gbps, c.device.link_latency_us);
  c.gpus_per_node = ranged<int>(f, "gpus_per_node", nodes.gpus_per_node);
  c.node_link_gbps = ranged_number(f, "node_link_gbps", nodes.node_link_gbps);
  c.node_link_latency_us = ranged_number(f, "node_link_latency_us", nodes.node_link_latency_us);
  f.choice("messaging", {"tagged", "ordered"}, "tagged");  // validated here, read by cluster_messaging()
  f.finish();
  return c;
}

// An integer field that may also be "auto" (the planner chooses it).
bool is_auto(JsonFields& f, const std::string& key) {
  if (!f.has(key) || !f.raw(key).is_string()) return false;
  if (f.raw(key).get<std::string>() != "auto")
    throw SpecError(f.path_of(key), "must be an integer or \"auto\", got \"" + f.raw(key).get<std::string>() + "\"");
  return true;
}

ParallelSpec parse_parallel(JsonFields f, const TrainingSpec& t, const ClusterSpec& c) {
  ParallelSpec p;
  p.data_auto = is_auto(f, "data");
  // tensor "auto" searches the split of the devices: a degree the job
  // leaves out is searched with it.
  const bool tensor_auto = is_auto(f, "tensor");
  if (tensor_auto && !f.has("data")) p.data_auto = true;
  if (!p.data_auto) p.data = ranged<int>(f, "data", 1);
  if (p.data > c.devices)
    throw SpecError(f.path_of("data"), "must be <= cluster.devices (" + std::to_string(c.devices) + "), got " +
                                           std::to_string(p.data));
  // Each replica trains on whole microbatches of its equal share.
  if (!t.microbatch_size_auto && t.batch_size % (static_cast<long long>(p.data) * t.microbatch_size) != 0)
    throw SpecError(f.path_of("data"), "training.batch_size (" + std::to_string(t.batch_size) +
                                           ") must be a multiple of data x microbatch_size (" +
                                           std::to_string(p.data) + " x " + std::to_string(t.microbatch_size) + ")");
  if (t.microbatch_size_auto && t.batch_size % p.data != 0)
    throw SpecError(f.path_of("data"), "training.batch_size (" + std::to_string(t.batch_size) +
                                           ") must be a multiple of data, got " + std::to_string(p.data));
  p.bucket_mb = ranged_number(f, "bucket_mb", 25.0);
  p.tensor_auto = is_auto(f, "tensor");
  if (!p.tensor_auto) p.tensor = ranged<int>(f, "tensor", 1);
  p.sequence = f.boolean("sequence", false);
  f.finish();
  return p;
}

// parallel.tensor against the model and the cluster: Megatron splits
// attention by heads, the FFN by its width and the embedding and head by
// vocabulary, so t must divide all three (tensor_split_refusal); the
// tensor group's all-reduces run on every layer and need the intra-node
// link, so a group lies inside one node (tensor_group_fits).
void check_tensor(const ParallelSpec& p, const ModelSpec& m, const ClusterSpec& c) {
  const std::string field = "parallel.tensor";
  if (p.tensor_auto || p.tensor == 1) return;
  const std::string t = std::to_string(p.tensor);
  if (m.kind != "bert" && m.kind != "gpt" && m.kind != "transformer")
    throw SpecError(field, "tensor parallelism splits attention heads and FFN widths; model.kind \"" + m.kind +
                               "\" has none to split (use a transformer-family model, or tensor 1), got " + t);
  if (auto why = tensor_split_refusal(m, p.tensor)) throw SpecError(field, *why);
  if (static_cast<long long>(p.tensor) * p.data > c.devices)
    throw SpecError(field, "tensor x parallel.data (" + t + " x " + std::to_string(p.data) +
                               ") must be <= cluster.devices (" + std::to_string(c.devices) + ")");
  if (!tensor_group_fits(p.tensor, c.gpus_per_node, c.devices))
    throw SpecError(field, "a tensor-parallel group must lie inside one node: must divide cluster.gpus_per_node (" +
                               std::to_string(c.gpus_per_node) + "), got " + t);
}

PipelineSpec parse_pipeline(JsonFields f, const TrainingSpec& t, const ClusterSpec& c, const ParallelSpec& par) {
  PipelineSpec p;
  p.stages_auto = is_auto(f, "stages") || (par.tensor_auto && !f.has("stages"));
  if (p.stages_auto && f.has("microbatches"))
    throw SpecError(f.path_of("microbatches"), "stages \"auto\" chooses the microbatch count with the replicas; "
                                               "leave microbatches out");
  if (par.tensor_auto && f.has("microbatches"))
    throw SpecError(f.path_of("microbatches"), "parallel.tensor \"auto\" chooses the microbatch count with the "
                                               "replicas; leave microbatches out");
  if (par.data_auto && f.has("microbatches"))
    throw SpecError(f.path_of("microbatches"), "parallel.data \"auto\" chooses the microbatch count with the "
                                               "replicas; leave microbatches out");
  // Unless it is searched, a pipeline takes every device its replicas and
  // tensor groups leave.
  const int fill = par.data_auto || par.tensor_auto ? c.devices : std::max(1, c.devices / (par.data * par.tensor));
  p.stages = p.stages_auto ? 1 : ranged<int>(f, "stages", fill);
  if (p.stages > c.devices)
    throw SpecError(f.path_of("stages"), "must be <= cluster.devices (" + std::to_string(c.devices) + "), got " +
                                             std::to_string(p.stages));
  if (static_cast<long long>(p.stages) * par.data > c.devices)
    throw SpecError(f.path_of("stages"), "stages x parallel.data (" + std::to_string(p.stages) + " x " +
                                             std::to_string(par.data) + ") must be <= cluster.devices (" +
                                             std::to_string(c.devices) + ")");
  if (static_cast<long long>(p.stages) * par.data * par.tensor > c.devices)
    throw SpecError("parallel.tensor", "tensor x stages x parallel.data (" + std::to_string(par.tensor) + " x " +
                                           std::to_string(p.stages) + " x " + std::to_string(par.data) +
                                           ") must be <= cluster.devices (" + std::to_string(c.devices) + ")");
  // Under microbatch_size "auto" the count is the search's; one until then.
  int derived = t.microbatch_size_auto ? 1 : t.batch_size / par.data / t.microbatch_size;
  if (derived > bounds::kMicrobatches)
    throw SpecError("training.batch_size", "batch_size / microbatch_size must be <= " +
                                               std::to_string(bounds::kMicrobatches) + " microbatches, got " +
                                               std::to_string(derived));
  if (t.microbatch_size_auto && f.has("microbatches"))
    throw SpecError(f.path_of("microbatches"), "training.microbatch_size \"auto\" chooses the microbatch count with "
                                               "the size; leave microbatches out");
  p.microbatches = ranged<int>(f, "microbatches", derived);
  if (p.microbatches != derived)
    throw SpecError(f.path_of("microbatches"),
                    par.data > 1 ? "must equal training.batch_size / (parallel.data x training.microbatch_size) (" +
                                       std::to_string(derived) + "), got " + std::to_string(p.microbatches)
                                 : "must equal training.batch_size / training.microbatch_size (" +
                                       std::to_string(derived) + "), got " + std::to_string(p.microbatches));
  // One name per schedule: supernet jobs once called PipeDream's "async-1f1b". Refused naming the
  // field and the name (docs/jobs.md), rather than run under a name nothing else uses.
  if (f.has("schedule") && f.raw("schedule") == "async-1f1b")
    throw SpecError(f.path_of("schedule"), "\"async-1f1b\" is called \"pipedream\" (PipeDream's 1F1B without flush, "
                                           "for supernet and pipeline jobs alike): set \"schedule\": \"pipedream\"");
  std::string schedule = f.choice("schedule", pipeline_schedule_choices(), "1f1b");
  p.schedule_auto = schedule == "auto";
  p.schedule = p.schedule_auto ? ScheduleKind::OneFOneB : *schedule_kind_from_string(schedule);
  p.planner = f.choice("planner", planner_names(), "uniform");
  const bool v_shape = is_v_shape(p.schedule);
  p.chunks = ranged<int>(f, "chunks", v_shape ? 2 : 1);
  if (p.schedule_auto && p.chunks != 1)
    throw SpecError(f.path_of("chunks"), "schedule \"auto\" chooses the chunks with the schedule; leave chunks out");
  if (v_shape && p.chunks != 2)
    throw SpecError(f.path_of("chunks"), to_string(p.schedule) + " places exactly 2 chunks per device, got " +
                                             std::to_string(p.chunks));
  const bool generated = p.schedule == ScheduleKind::Generated;
  if (generated && p.chunks > 2)
    throw SpecError(f.path_of("chunks"), "schedule \"generated\" runs one chunk per device or two in a V, got " +
                                             std::to_string(p.chunks));
  if (p.chunks > 1 && p.schedule != ScheduleKind::Interleaved && !v_shape && !generated)
    throw SpecError(f.path_of("chunks"), "chunks > 1 needs schedule \"interleaved\"");
  // The planners refuse it too (for --planner); the job says so on load.
  // Exact plans a V's two chunks; PipeDream's planner none.
  if (p.chunks > 1 && (p.planner == "pipedream" || (!v_shape && p.planner == "exact")))
    throw SpecError(f.path_of("chunks"), "planner \"" + p.planner + "\" plans one chunk per device, got " +
                                             std::to_string(p.chunks));
  if (f.has("memory_cap")) {
    const nlohmann::json v = f.raw("memory_cap");
    try {
      if (v.is_number())
        p.memory_cap = memory_cap_fraction(v.get<double>());
      else if (v.is_string())
        p.memory_cap = parse_memory_cap(v.get<std::string>());
      else
        throw std::invalid_argument("must be a fraction of 1F1B's activations (0.5, \"1/3\") or bytes (\"12GiB\")");
    } catch (const std::invalid_argument& e) {
      throw SpecError(f.path_of("memory_cap"), e.what());
    }
    if (p.schedule == ScheduleKind::PipeDream || p.schedule == ScheduleKind::CSP)
      throw SpecError(f.path_of("memory_cap"), "caps the activations of a flushing pipeline schedule; \"" +
                                                   to_string(p.schedule) + "\" has no such order");
  }
  const bool shape_known = !t.microbatch_size_auto && !p.stages_auto && !par.data_auto && !par.tensor_auto;
  if (p.schedule == ScheduleKind::DualPipeV && p.microbatches < 2 * p.stages && shape_known)
    throw SpecError(f.path_of("microbatches"), "dualpipe-v needs microbatches >= 2 x stages (" +
                                                   std::to_string(2 * p.stages) + "), got " +
                                                   std::to_string(p.microbatches));
  if (p.schedule == ScheduleKind::Interleaved && p.microbatches % p.stages != 0 && shape_known)
    throw SpecError(f.path_of("microbatches"), "interleaved 1F1B needs microbatches to be a multiple of stages (" +
                                                   std::to_string(p.stages) + "), got " +
                                                   std::to_string(p.microbatches));
  f.finish();
  return p;
}
}  // namespace

std::vector<std::string> pipeline_schedule_choices() {
  std::vector<std::string> names = schedule_kind_names();
  names.push_back("auto");
  return names;
}

JobSpec parse_job(const nlohmann::json& doc) {
  JsonFields f(doc, "");
  JobSpec job;
  job.raw = doc;
  job.name = f.str("name");
  if (job.name.empty()) throw SpecError("name", "must not be empty");
  job.model = parse_model(f.object("model"));
  job.search_space = f.raw("search_space");
  if (f.has("data")) job.data = parse_data(f.object("data"), job.model);
  job.training = parse_training(f.object("training", false));
  job.cluster = parse_cluster(f.object("cluster", false));
  if (!job.training.microbatch_size_auto)  // auto: resolve_auto_microbatch reads it per size
    job.cluster.device.action_overhead_us = action_overhead_at(job.cluster.device, job.training.microbatch_size);
  job.parallel = parse_parallel(f.object("parallel", false), job.training, job.cluster);
  check_tensor(job.parallel, job.model, job.cluster);
  job.pipeline = parse_pipeline(f.object("pipeline", false), job.training, job.cluster, job.parallel);
  // CSP schedules a supernet's subnets as they run; without a search space
  // there is nothing for it to schedule (every command refuses it alike).
  if (job.pipeline.schedule == ScheduleKind::CSP && job.search_space.is_null())
    throw SpecError("pipeline.schedule", "\"csp\" schedules the subnets of a supernet job, and this job has no "
                                         "search_space: give it one (docs/nas.md), or use a static schedule (--set "
                                         "pipeline.schedule=1f1b)");
  if (f.has("runtime")) job.runtime = parse_runtime(f.object("runtime"), job.pipeline.stages);
  if ((job.runtime.replan || !job.runtime.migrate.empty()) && !flushes(job.pipeline.schedule))
    throw SpecError("runtime", "live migration (runtime.replan, runtime.migrate) switches owners at a flush; the "
                               "pipedream schedule has none (use gpipe, 1f1b or interleaved)");
  f.finish();
  // Both need every stage's gradients of one batch at one step; PipeDream's
  // stages step per microbatch on different weight versions.
  if ((job.training.clip_grad_norm > 0 || job.training.skip_nonfinite) &&
      !flushes(job.pipeline.schedule))
    throw SpecError(job.training.clip_grad_norm > 0 ? "training.clip_grad_norm" : "training.skip_nonfinite",
                    "needs a schedule with a flush (not pipedream)");
  if (job.model.kind == "uniform" || job.model.layers > 0) {
    int layers = job.model.kind == "uniform" ? job.model.layers : 0;
    if (layers > 0 && job.pipeline.stages * job.pipeline.chunks > layers)
      throw SpecError("pipeline.stages", "stages x chunks (" +
                                             std::to_string(job.pipeline.stages * job.pipeline.chunks) +
                                             ") must be <= model.layers (" + std::to_string(layers) + ")");
  }
  return job;
}

JobSpec job_from_text(const std::string& text, const std::string& base_dir, const std::vector<std::string>& overrides) {
  nlohmann::json doc = parse_bounded_json(text);
  for (const auto& o : overrides) apply_override(doc, o);
  JobSpec job = parse_job(doc);
  // Paths in the job are relative to its file; written back into the
  // document too, because workers receive job.raw.
  auto resolve = [&](nlohmann::json* node, std::string& value) {
    if (value.empty() || std::filesystem::path(value).is_absolute()) return;
    value = std::filesystem::absolute(std::filesystem::path(base_dir) / value).lexically_normal().string();
    if (node) (*node)["path"] = value;
  };
  std::filesystem::path prof(job.model.profile);
  if (!job.model.profile.empty() && prof.is_relative())
    job.model.profile = (std::filesystem::path(base_dir) / prof).lexically_normal().string();
  if (job.model.kind == "torchscript") resolve(&job.raw["model"], job.model.path);
  if (job.data.kind == "tensors") resolve(&job.raw["data"], job.data.dir);
  return job;
}

JobSpec load_job(const std::string& file, const std::vector<std::string>& overrides) {
  std::string text = read_bounded_file(file, kMaxJobFileBytes, "job file");
  return job_from_text(text, std::filesystem::path(file).parent_path().string(), overrides);
}

}  // namespace pw

#include "core/nas/search_space.h"

#include <algorithm>
#include <cmath>

#include "core/model/analytic_profile.h"
#include "core/nas/search_space_fields.h"
#include "core/nas/search_space_names.h"
#include "core/spec/json_fields.h"
#include "core/spec/spec_bounds.h"
#include "core/spec/spec_error.h"

namespace pw::nas {
namespace {
constexpr double MB = 1024.0 * 1024;

// A field of the bounds table (search_space_fields.h), read with its row's range.
int ranged_int(JsonFields& f, const char* key, int def, SpaceScope scope = SpaceScope::Space) {
  const SpaceField& r = search_space_field(key, scope);
  return f.integer<int>(key, static_cast<int>(r.min), static_cast<int>(r.max), def);
}
double ranged_number(JsonFields& f, const char* key, double def, SpaceScope scope = SpaceScope::Space) {
  const SpaceField& r = search_space_field(key, scope);
  return f.number(key, r.min, r.max, def);
}
std::vector<int> ranged_list(JsonFields& f, const char* key, std::vector<int> def) {
  const SpaceField& r = search_space_field(key);
  return f.int_list<int>(key, static_cast<int>(r.min), static_cast<int>(r.max), 64, std::move(def));
}

// Costs of the Evolved-Transformer operations (So et al. 2019; NASPipe's
// space) on [s, b, h] activations. Every op includes its layer norm and
// residual; backward is twice the forward FLOPs, as in analytic_profile.
class EtCosts {
 public:
  explicit EtCosts(const JobSpec& job) : job_(job) {
    const auto& m = job.model;
    h_ = m.hidden;
    s_ = m.seq_len;
    b_ = job.training.microbatch_size;
    tokens_ = b_ * s_;
    tensor_ = tokens_ * h_ * (m.precision == "fp32" ? 4 : 2);
    elem_ = m.precision == "fp32" ? 4 : 2;
  }
  Candidate op(const std::string& name, const std::string& op, int kernel, int heads) const {
    double h = h_, t = tokens_, T = tensor_;
    double flops = 0, params = 0, act = 0;
    if (op == "conv") {  // standard 1-D conv over the sequence, h -> h
      params = kernel * h * h + h;
      flops = 2 * t * kernel * h * h;
      act = 3 * T;
    } else if (op == "sep_conv") {  // depthwise k + pointwise
      params = kernel * h + h * h + 2 * h;
      flops = 2 * t * (kernel * h + h * h);
      act = 4 * T;
    } else if (op == "light_conv") {  // GLU in-projection, shared-weight conv per head, out-projection
      params = 3 * h * h + kernel * heads;
      flops = 2 * t * (3 * h * h + kernel * h);
      act = 5 * T + b_ * heads * s_ * kernel * elem_;
    } else if (op == "attention" || op == "cross_attention") {
      params = 4 * h * h + 6 * h;
      flops = t * (8 * h * h + 4 * s_ * h);
      act = 6.5 * T + 5.0 * heads * s_ * s_ * b_ * elem_ / 2;
      if (op == "cross_attention") act += T;
    } else if (op == "glu") {
      params = 2 * h * h + 2 * h;
      flops = 4 * t * h * h;
      act = 4 * T;
    } else {  // identity
      act = 0;
    }
    Candidate c;
    c.op = op;
    c.kernel = kernel;
    c.heads = heads;
    c.cost = analytic_layer(job_, name, op, flops, 2 * flops, act, T, T, params);
    if (op == "identity") c.cost.fwd_ms = c.cost.bwd_ms = 0;
    return c;
  }

 private:
  const JobSpec& job_;
  double h_, s_, b_, tokens_, tensor_, elem_;
};

// The 24-op encoder set of NASPipe; the decoder adds cross-attention (25).
std::vector<Candidate> et_ops(const EtCosts& et, const std::string& name, bool decoder, int replication) {
  std::vector<Candidate> base;
  for (int k : {1, 3, 5}) base.push_back(et.op(name, "conv", k, 0));
  for (int k : {3, 5, 7, 9, 11}) base.push_back(et.op(name, "sep_conv", k, 0));
  for (int k : {3, 5, 7, 15})
    for (int heads : {1, 4, 16}) base.push_back(et.op(name, "light_conv", k, heads));
  for (int heads : {4, 8, 16}) base.push_back(et.op(name, "attention", 0, heads));
  base.push_back(et.op(name, "glu", 0, 0));
  if (decoder) base.push_back(et.op(name, "cross_attention", 0, 8));
  std::vector<Candidate> out;
  for (int r = 0; r < replication; ++r)
    for (auto c : base) {
      c.replica = r;
      out.push_back(c);
    }
  return out;
}

void require_model(const JobSpec& job, const std::string& kind, const std::string& why) {
  if (job.model.kind != kind)
    throw SpecError("model.kind", why + " needs model kind \"" + kind + "\", got \"" + job.model.kind + "\"");
}

void build_et(const JobSpec& job, JsonFields& f, SearchSpace& sp) {
  require_model(job, "transformer", "search_space.builtin \"evolved-transformer\"");
  EtCosts et(job);
  for (int i = 0; i < job.model.encoder_layers; ++i)
    sp.layers.push_back({"enc" + std::to_string(i), et_ops(et, "enc" + std::to_string(i), false, sp.replication)});
  for (int i = 0; i < job.model.decoder_layers; ++i)
    sp.layers.push_back({"dec" + std::to_string(i), et_ops(et, "dec" + std::to_string(i), true, sp.replication)});
  ModelProfile whole = analytic_profile(job);  // embedding and head, same conventions
  sp.has_stem = sp.has_head = true;
  sp.stem = whole.layers.front();
  sp.head = whole.layers.back();
}

// Fashion-MNIST: a frozen stem (3x3 conv to C channels, ReLU, 2x2 pool),
// choice layers at C channels and half resolution, a frozen head (linear
// over the whole feature map). Candidates: conv k x k C->w, ReLU, 1x1 w->C, ReLU
// for each kernel and width, and identity.
void build_cnn(const JobSpec& job, JsonFields& f, SearchSpace& sp) {
  require_model(job, "cnn", "search_space.builtin \"fmnist-cnn\"");
  const auto& m = job.model;
  double b = job.training.microbatch_size;
  double C = m.widths.front(), hw = m.image_size / 2.0, area = hw * hw, in = m.in_channels;
  int n = ranged_int(f, "choice_layers", 4);
  auto kernels = ranged_list(f, "kernels", {3, 5, 7});
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i] % 2 == 0)
      throw SpecError(f.path_of("kernels") + "[" + std::to_string(i) + "]", "must be odd (same padding), got " +
                                                                             std::to_string(kernels[i]));
  auto widths = ranged_list(f, "widths", {static_cast<int>(C), 2 * static_cast<int>(C)});
  bool skip = f.boolean("skip", true);
  double tensor = b * C * area * 4;
  for (int l = 0; l < n; ++l) {
    ChoiceLayer cl{"cell" + std::to_string(l), {}};
    for (long long k : kernels)
      for (long long w : widths) {
        double params = k * k * C * w + w + w * C + C;
        double flops = 2 * b * area * (k * k * C * w + w * C);
        Candidate c;
        c.op = "conv";
        c.kernel = static_cast<int>(k);
        c.width = static_cast<int>(w);
        c.cost = analytic_layer(job, cl.name, "conv", flops, 2 * flops, tensor + 2 * b * w * area * 4 + tensor, tensor,
                                tensor, params);
        cl.candidates.push_back(c);
      }
    if (skip) {
      Candidate c;
      c.op = "identity";
      c.cost = analytic_layer(job, cl.name, "identity", 0, 0, 0, tensor, tensor, 0);
      cl.candidates.push_back(c);
    }
    sp.layers.push_back(cl);
  }
  double full = m.image_size * m.image_size;
  sp.has_stem = sp.has_head = true;
  sp.stem = analytic_layer(job, "stem", "conv3x3+relu+pool", 2 * b * 9 * in * C * full, 0, b * C * full * 8,
                           b * in * full * 4, tensor, 9 * in * C + C);
  // The trainer's head (runtime/nas/supernet_modules.h): linear over the
  // whole C x hw x hw map, whose weights stay on the device beside the cache.
  sp.head = analytic_layer(job, "head", "linear", 2 * b * C * area * m.classes, 2 * b * C * area * m.classes, tensor,
                           tensor, b * m.classes * 4, C * area * m.classes + m.classes);
}

LayerProfile uniform_cost(JsonFields& f, const std::string& name) {
  LayerProfile l;
  l.name = name;
  l.type = "uniform";
  l.fwd_ms = ranged_number(f, "fwd_ms", 1.0, SpaceScope::Candidate);
  l.bwd_ms = ranged_number(f, "bwd_ms", 2 * l.fwd_ms, SpaceScope::Candidate);
  l.param_bytes = static_cast<std::uint64_t>(ranged_number(f, "param_mb", 0.0, SpaceScope::Candidate) * MB);
  l.activation_bytes = static_cast<std::uint64_t>(ranged_number(f, "activation_mb", 0.0, SpaceScope::Candidate) * MB);
  l.output_bytes = l.input_bytes = static_cast<std::uint64_t>(ranged_number(f, "output_mb", 0.0, SpaceScope::Candidate) * MB);
  l.optimizer_ms = ranged_number(f, "optimizer_ms", 0.0, SpaceScope::Candidate);
  return l;
}

// Unit-cost layers for scheduling studies: `choices` identical candidates.
void build_uniform(JsonFields& f, SearchSpace& sp) {
  int n = ranged_int(f, "choice_layers", 8);
  int c = ranged_int(f, "choices", 4);
  // Every candidate is held in memory (a profile each): bound their number.
  if (static_cast<std::int64_t>(n) * c > (1 << 21))
    throw SpecError(f.path_of("choices"), "choice_layers x choices must be <= " + std::to_string(1 << 21) + ", got " +
                                              std::to_string(static_cast<std::int64_t>(n) * c));
  LayerProfile cost = uniform_cost(f, "");
  for (int l = 0; l < n; ++l) {
    ChoiceLayer cl{"layer" + std::to_string(l), {}};
    for (int i = 0; i < c; ++i) {
      Candidate cand;
      cand.op = "uniform";
      cand.replica = i;
      cand.cost = cost;
      cand.cost.name = cl.name;
      cl.candidates.push_back(cand);
    }
    sp.layers.push_back(cl);
  }
}

Candidate custom_candidate(const JobSpec& job, JsonFields f, const std::string& layer) {
  std::string op = f.choice("op", search_space_names().ops);
  Candidate c;
  if (op == "uniform") {
    c.op = op;
    c.cost = uniform_cost(f, layer);
  } else {
    if (job.model.kind != "transformer")
      throw SpecError(f.path_of("op"), "op \"" + op + "\" is an Evolved-Transformer op and needs model kind "
                                       "\"transformer\" (use op \"uniform\" with explicit costs otherwise)");
    int kernel = ranged_int(f, "kernel", 1, SpaceScope::Candidate);
    int heads = ranged_int(f, "heads", 1, SpaceScope::Candidate);
    c = EtCosts(job).op(layer, op, kernel, heads);
  }
  f.finish();
  return c;
}

void build_custom(const JobSpec& job, JsonFields& f, SearchSpace& sp) {
  nlohmann::json layers = f.raw("layers");
  std::string path = f.path_of("layers");
  if (!layers.is_array() || layers.empty()) throw SpecError(path, "must be a non-empty array of choice layers");
  for (size_t i = 0; i < layers.size(); ++i) {
    std::string lp = path + "[" + std::to_string(i) + "]";
    JsonFields lf(layers[i], lp);
    std::string name = lf.str("name", "layer" + std::to_string(i));
    int repeat = ranged_int(lf, "repeat", 1, SpaceScope::Layer);
    nlohmann::json cands = lf.raw("candidates");
    if (!cands.is_array() || cands.empty())
      throw SpecError(lf.path_of("candidates"), "must be a non-empty array of candidate ops");
    ChoiceLayer cl{name, {}};
    for (size_t c = 0; c < cands.size(); ++c)
      cl.candidates.push_back(custom_candidate(job, JsonFields(cands[c], lf.path_of("candidates") + "[" +
                                                                             std::to_string(c) + "]"), name));
    lf.finish();
    for (int r = 0; r < repeat; ++r) {
      ChoiceLayer copy = cl;
      if (repeat > 1) copy.name += "." + std::to_string(r);
      sp.layers.push_back(copy);
    }
  }
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

ChoiceLayer shared_layer(const LayerProfile& p) {
  Candidate c;
  c.op = "shared";
  c.cost = p;
  return {p.name, {c}};
}
}  // namespace

std::string Candidate::label() const {
  std::string s = op;
  if (kernel) s += " k" + std::to_string(kernel);
  if (heads) s += " h" + std::to_string(heads);
  if (width) s += " w" + std::to_string(width);
  if (replica) s += " #" + std::to_string(replica);
  return s;
}

int SearchSpace::max_choices() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.choices());
  return m;
}

double SearchSpace::log10_subnets() const {
  double s = 0;
  for (const auto& l : layers) s += std::log10(static_cast<double>(l.choices()));
  return s;
}

const SearchSpaceNames& search_space_names() {
  static const SearchSpaceNames names{{"evolved-transformer", "fmnist-cnn", "uniform"},
                                      {"conv", "sep_conv", "light_conv", "attention", "cross_attention", "glu",
                                       "identity", "uniform"},
                                      {"balanced", "csp"},
                                      {"uniform", "list"},
                                      {"frozen", "train"}};
  return names;
}

bool is_supernet_job(const JobSpec& job) { return !job.search_space.is_null(); }

SearchSpace parse_search_space(const JobSpec& job) {
  if (job.search_space.is_null()) throw SpecError("search_space", "is required for a supernet job");
  const SearchSpaceNames& names = search_space_names();
  JsonFields f(job.search_space, "search_space");
  SearchSpace sp;
  bool builtin = f.has("builtin");
  if (builtin == f.has("layers"))
    throw SpecError("search_space", "needs exactly one of \"builtin\" (" + joined(names.builtins) +
                                    ") or \"layers\" (a custom list)");
  sp.kind = builtin ? f.choice("builtin", names.builtins) : "custom";
  sp.replication = ranged_int(f, "replication", 1);
  if (sp.replication > 1 && sp.kind != "evolved-transformer")
    throw SpecError(f.path_of("replication"), "only the evolved-transformer space is replicated");
  sp.window = ranged_int(f, "window", 32);
  sp.partition = f.choice("partition", names.partitions, names.partitions.front());
  sp.device_budget_bytes = ranged_number(f, "device_budget_gb", 0.0) * 1024 * MB;
  sp.shared = f.choice("shared", names.shared, names.shared.front()) == "train" ? SharedRule::Train : SharedRule::Frozen;
  sp.sampler = f.choice("sampler", names.samplers, names.samplers.front());
  sp.subnet_file = f.str("subnet_file", "");
  if (f.has("search")) f.raw("search");  // the evolutionary search's settings: parse_evolution
  if (sp.sampler == "list" && sp.subnet_file.empty())
    throw SpecError(f.path_of("subnet_file"), "is required when sampler is \"list\"");
  if (sp.kind == "evolved-transformer") build_et(job, f, sp);
  else if (sp.kind == "fmnist-cnn") build_cnn(job, f, sp);
  else if (sp.kind == "uniform") build_uniform(f, sp);
  else build_custom(job, f, sp);
  f.finish();
  if (sp.shared == SharedRule::Train) {
    if (sp.has_stem) sp.layers.insert(sp.layers.begin(), shared_layer(sp.stem));
    if (sp.has_head) sp.layers.push_back(shared_layer(sp.head));
    sp.has_stem = sp.has_head = false;
  } else {
    // Frozen: no weight gradient; the stem needs no input gradient either,
    // the head only the gradient of its input.
    sp.stem.bwd_ms = 0;
    sp.head.bwd_ms /= 2;
    sp.stem.optimizer_bytes = sp.head.optimizer_bytes = 0;
    sp.stem.optimizer_ms = sp.head.optimizer_ms = 0;
  }
  return sp;
}

}  // namespace pw::nas

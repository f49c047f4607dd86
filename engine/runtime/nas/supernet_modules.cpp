#include "runtime/nas/supernet_modules.h"

#include "core/io/checked_write.h"
#include "core/spec/optimizer_state.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace pw::rt::nas {
namespace {
at::Tensor init(at::IntArrayRef shape, double fan_in, at::Generator& g) {
  double bound = 1.0 / std::sqrt(fan_in);
  return at::empty(shape, at::kFloat).uniform_(-bound, bound, g);
}
at::Generator gen(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  return at::make_generator<at::CPUGeneratorImpl>(seed * 1000003ull + a * 7919ull + b + 17);
}
}  // namespace

at::Tensor Candidate::forward(const at::Tensor& x) const {
  if (kernel == 0) return x;
  // Residual cell: the stem's features pass through, so the frozen head
  // sees signal from the first step and every candidate learns a correction.
  auto y = at::relu(at::conv2d(x, params[0], params[1], 1, kernel / 2));
  return x + at::conv2d(y, params[2], params[3]);
}

CnnSupernet::CnnSupernet(const JobSpec& job, const pw::nas::SearchSpace& space, pw::nas::StageSlots slots)
    : slots_(slots) {
  if (space.kind != "fmnist-cnn")
    throw std::invalid_argument("the CPU supernet trainer implements search_space.builtin \"fmnist-cnn\", got \"" +
                                space.kind + "\"");
  if (space.shared != pw::nas::SharedRule::Frozen)
    throw std::invalid_argument("search_space.shared: the CPU supernet trainer keeps stem and head frozen");
  channels_ = job.model.widths.front();
  half_ = job.model.image_size / 2;
  has_head_ = slots.last == space.size() - 1;
  std::uint64_t seed = job.training.seed;
  for (int l = slots.first; l <= slots.last; ++l) {
    std::vector<Candidate> cands;
    for (int c = 0; c < space.layers[l].choices(); ++c) {
      const auto& spec = space.layers[l].candidates[c];
      Candidate cand;
      if (spec.op == "conv") {
        auto g = gen(seed, 1 + l, c);
        std::int64_t k = spec.kernel, w = spec.width, C = channels_;
        cand.kernel = spec.kernel;
        cand.params = {init({w, C, k, k}, C * k * k, g), init({w}, C * k * k, g), init({C, w, 1, 1}, w, g),
                       init({C}, w, g)};
        for (auto& p : cand.params) p.set_requires_grad(true);
        int per = optimizer_states_per_param(job.training.optimizer);
        for (int i = 0; i < per; ++i)
          for (const auto& p : cand.params) cand.state.push_back(at::zeros_like(p.detach()));
      }
      cands.push_back(std::move(cand));
    }
    layers_.push_back(std::move(cands));
  }
  auto g = gen(seed, 0, 0);  // frozen: no gradients, never updated
  std::int64_t in = job.model.in_channels, C = channels_;
  stem_w_ = init({C, in, 3, 3}, in * 9, g);
  stem_b_ = init({C}, in * 9, g);
  // Frozen head over the whole feature map (not its global mean): a fixed
  // random projection the trained candidates can shape features for; after
  // a global mean a frozen 16 -> 10 map left too little to learn.
  std::int64_t features = C * half_ * half_;
  head_w_ = init({job.model.classes, features}, features / 4.0, g);
  head_b_ = init({job.model.classes}, C, g);
}

at::Tensor CnnSupernet::stem(const at::Tensor& images) const {
  return at::max_pool2d(at::relu(at::conv2d(images, stem_w_, stem_b_, 1, 1)), {2, 2});
}

at::Tensor CnnSupernet::head(const at::Tensor& x) const {
  return at::linear(x.flatten(1), head_w_, head_b_);
}

at::Tensor CnnSupernet::layers(const pw::nas::Subnet& subnet, const at::Tensor& x) const {
  at::Tensor y = x;
  for (int l = slots_.first; l <= slots_.last; ++l) y = layers_[l - slots_.first][subnet[l]].forward(y);
  return y;
}

void CnnSupernet::sgd_update(const pw::nas::Subnet& subnet, double lr) {
  at::NoGradGuard ng;
  for (int l = slots_.first; l <= slots_.last; ++l)
    for (auto& p : layers_[l - slots_.first][subnet[l]].params) {
      if (!p.grad().defined()) continue;
      // Through variable_data(): the same in-place step, without bumping the
      // autograd version. Under CSP no graph in flight holds this candidate;
      // the racing baseline's graphs do, and must run on (reading the
      // updated values) instead of aborting its backward.
      p.variable_data().sub_(p.grad(), lr);
      p.mutable_grad() = at::Tensor();
    }
}

void CandidateOptimizer::step(Candidate& c) const {
  at::NoGradGuard ng;
  const size_t n = c.params.size();
  ++c.steps;
  for (size_t i = 0; i < n; ++i) {
    at::Tensor& p = c.params[i];
    if (!p.grad().defined()) continue;
    at::Tensor g = p.grad();
    // variable_data(): see sgd_update.
    at::Tensor w = p.variable_data();
    if (kind == "momentum") {
      at::Tensor& buf = c.state[i];
      buf.mul_(0.9).add_(g);
      w.sub_(buf, lr);
    } else if (kind == "adam") {
      const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
      at::Tensor &m = c.state[i], &v = c.state[n + i];
      m.mul_(b1).add_(g, 1 - b1);
      v.mul_(b2).addcmul_(g, g, 1 - b2);
      const double bc1 = 1 - std::pow(b1, static_cast<double>(c.steps));
      const double bc2 = 1 - std::pow(b2, static_cast<double>(c.steps));
      at::Tensor denom = (v.sqrt() / std::sqrt(bc2)).add_(eps);
      w.addcdiv_(m, denom, -lr / bc1);
    } else {
      w.sub_(g, lr);
    }
    p.mutable_grad() = at::Tensor();
  }
}

void CnnSupernet::update(const pw::nas::Subnet& subnet, const CandidateOptimizer& opt) {
  for (int l = slots_.first; l <= slots_.last; ++l) {
    Candidate& c = layers_[l - slots_.first][subnet[l]];
    if (!c.params.empty()) opt.step(c);
  }
}

std::uint64_t fnv1a(const at::Tensor& t, std::uint64_t h) {
  at::Tensor c = t.detach().contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  for (std::int64_t i = 0; i < c.numel() * static_cast<std::int64_t>(c.element_size()); ++i) {
    h ^= bytes[i];
    h *= 1099511628211ull;
  }
  return h;
}

void CnnSupernet::save(const std::string& path) const {
  std::string bytes;
  for (const auto& layer : layers_)
    for (const auto& cand : layer)
      for (const auto& p : cand.params) {
        at::Tensor c = p.detach().contiguous();
        bytes.append(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
      }
  // Through the checked writer: a full disk is named, and the search never
  // reads a truncated file as trained weights.
  write_file_atomically(path, bytes, "supernet weights");
}

void CnnSupernet::load(const std::string& path, int first, int last) {
  if (first < slots_.first || last > slots_.last)
    throw std::invalid_argument("\"" + path + "\": layers " + std::to_string(first) + ".." + std::to_string(last) +
                                " are not all held here");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read \"" + path + "\"");
  std::streamsize size = in.tellg(), need = 0;
  for (int l = first; l <= last; ++l)
    for (const auto& cand : layers_[l - slots_.first])
      for (const auto& p : cand.params) need += p.numel() * static_cast<std::streamsize>(p.element_size());
  if (size != need)
    throw std::runtime_error("\"" + path + "\": " + std::to_string(size) + " bytes, layers " + std::to_string(first) +
                             ".." + std::to_string(last) + " of this job need " + std::to_string(need));
  in.seekg(0);
  at::NoGradGuard ng;
  for (int l = first; l <= last; ++l)
    for (auto& cand : layers_[l - slots_.first])
      for (auto& p : cand.params) {
        at::Tensor v = p.variable_data();
        in.read(static_cast<char*>(v.data_ptr()), v.numel() * static_cast<std::streamsize>(v.element_size()));
      }
}

std::string CnnSupernet::state_bytes() const {
  std::string bytes;
  auto put = [&](const at::Tensor& t) {
    at::Tensor c = t.detach().contiguous();
    bytes.append(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
  };
  for (const auto& layer : layers_)
    for (const auto& cand : layer) {
      for (const auto& p : cand.params) put(p);
      for (const auto& t : cand.state) put(t);
    }
  return bytes;
}

std::vector<std::int64_t> CnnSupernet::optimizer_steps() const {
  std::vector<std::int64_t> out;
  for (const auto& layer : layers_)
    for (const auto& cand : layer) out.push_back(cand.steps);
  return out;
}

void CnnSupernet::restore_state(const std::string& bytes, const std::vector<std::int64_t>& steps,
                                const std::string& what) {
  std::size_t need = 0, cands = 0;
  for (const auto& layer : layers_)
    for (const auto& cand : layer) {
      ++cands;
      for (const auto& p : cand.params) need += p.numel() * p.element_size();
      for (const auto& t : cand.state) need += t.numel() * t.element_size();
    }
  if (bytes.size() != need)
    throw std::runtime_error(what + ": " + std::to_string(bytes.size()) + " bytes, layers " +
                             std::to_string(slots_.first) + ".." + std::to_string(slots_.last) + " of this job need " +
                             std::to_string(need));
  if (steps.size() != cands)
    throw std::runtime_error(what + ": optimizer steps for " + std::to_string(steps.size()) + " candidates, this stage holds " +
                             std::to_string(cands));
  at::NoGradGuard ng;
  std::size_t at = 0, i = 0;
  auto get = [&](at::Tensor t) {
    const std::size_t n = t.numel() * t.element_size();
    std::memcpy(t.data_ptr(), bytes.data() + at, n);
    at += n;
  };
  for (auto& layer : layers_)
    for (auto& cand : layer) {
      for (auto& p : cand.params) get(p.variable_data());
      for (auto& t : cand.state) get(t);
      cand.steps = steps[i++];
    }
}

std::uint64_t CnnSupernet::hash() const { return hash_range(slots_.first, slots_.last); }

std::uint64_t CnnSupernet::hash_range(int first, int last) const {
  std::uint64_t h = 1469598103934665603ull;
  for (int l = std::max(first, slots_.first); l <= std::min(last, slots_.last); ++l)
    for (const auto& cand : layers_[l - slots_.first])
      for (const auto& p : cand.params) h = fnv1a(p, h);
  return h;
}

}  // namespace pw::rt::nas

namespace pw::rt::nas {
at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels) {
  return at::nll_loss(at::log_softmax(logits, 1), labels);
}
}  // namespace pw::rt::nas

#include "runtime/data.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "core/spec/spec_error.h"
#include "runtime/layers.h"
#include "runtime/model_family.h"

namespace pw::rt {
namespace {

std::vector<unsigned char> gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot open");
  std::vector<unsigned char> out;
  unsigned char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  bool bad = n < 0;
  gzclose(f);
  if (bad) throw std::runtime_error(path + ": not a valid gzip file");
  return out;
}

uint32_t be32(const std::vector<unsigned char>& b, size_t at) {
  return (uint32_t(b[at]) << 24) | (uint32_t(b[at + 1]) << 16) | (uint32_t(b[at + 2]) << 8) | b[at + 3];
}

at::Generator seeded(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

Dataset synthetic(const JobSpec& job, int64_t n, uint64_t seed) {
  // Labels come from a fixed random linear teacher so the task is learnable.
  auto shape = model_input_shape(job);
  shape[0] = n;
  auto gen = seeded(seed);
  Dataset d;
  d.inputs = at::normal(0, 1, shape, gen);
  int classes = job.model.classes > 0 ? job.model.classes : 10;
  auto teacher_gen = seeded(job.training.seed ^ 0x5eedULL);
  auto w = at::normal(0, 1, {d.inputs[0].numel(), classes}, teacher_gen);
  d.labels = at::argmax(at::matmul(d.inputs.reshape({n, -1}), w), 1);
  return d;
}


}  // namespace

Dataset read_idx_pair(const std::string& images_gz, const std::string& labels_gz, int64_t limit) {
  auto img = gunzip(images_gz);
  auto lab = gunzip(labels_gz);
  if (img.size() < 16 || be32(img, 0) != 0x803) throw std::runtime_error(images_gz + ": not an IDX image file");
  if (lab.size() < 8 || be32(lab, 0) != 0x801) throw std::runtime_error(labels_gz + ": not an IDX label file");
  int64_t n = be32(img, 4), rows = be32(img, 8), cols = be32(img, 12);
  if (static_cast<int64_t>(be32(lab, 4)) != n)
    throw std::runtime_error(labels_gz + ": " + std::to_string(be32(lab, 4)) + " labels for " + std::to_string(n) +
                             " images");
  if (img.size() < 16 + size_t(n * rows * cols) || lab.size() < 8 + size_t(n))
    throw std::runtime_error(images_gz + ": truncated");
  if (limit > 0 && limit < n) n = limit;
  Dataset d;
  d.inputs = at::from_blob(img.data() + 16, {n, 1, rows, cols}, at::kByte).to(at::kFloat).div_(255.0);
  d.labels = at::from_blob(lab.data() + 8, {n}, at::kByte).to(at::kLong);
  return d;
}

Dataset read_text_windows(const std::string& dir, int seq_len, bool masked, bool test, uint64_t seed) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    auto ext = e.path().extension();
    if (e.is_regular_file() && ext != ".dat" && ext != ".u8") files.push_back(e.path());
  }
  if (ec) throw std::runtime_error(dir + ": cannot list the directory: " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<unsigned char> bytes;
  for (auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    bytes.insert(bytes.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  int64_t windows = bytes.size() > size_t(seq_len) ? (static_cast<int64_t>(bytes.size()) - 1) / seq_len : 0;
  int64_t n_test = windows / 20, n_train = windows - n_test;
  if (n_train < 1 || n_test < 1) throw std::runtime_error(dir + ": not enough text for windows of " + std::to_string(seq_len));
  int64_t first = test ? n_train : 0, n = test ? n_test : n_train;
  auto all = at::from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, at::kByte).to(at::kLong);
  auto idx = (at::arange(n, at::kLong) + first).mul_(seq_len).unsqueeze(1) + at::arange(seq_len + 1, at::kLong);
  auto w = all.index({idx});
  Dataset d;
  if (!masked) {
    d.inputs = w.narrow(1, 0, seq_len).contiguous();
    d.labels = w.narrow(1, 1, seq_len).contiguous();
  } else {
    auto x = w.narrow(1, 0, seq_len).contiguous();
    auto gen = seeded(seed);
    auto mask = at::rand({n, seq_len}, gen).lt(0.15);
    d.labels = at::where(mask, x, at::full_like(x, -100));
    d.inputs = at::where(mask, at::full_like(x, 255), x);
  }
  return d;
}

TrainData::TrainData(const JobSpec& job) : spec_(job.data), job_(job) {
  if (const DataFamily* f = data_family(spec_.kind))
    train_ = f->read(job, false);
  else if (spec_.kind == "text")
    train_ = read_text_windows(spec_.dir, job.model.seq_len, job.model.kind == "bert", false, job.training.seed + 3);
  else if (spec_.kind == "fashion-mnist")
    train_ = read_idx_pair(spec_.dir + "/train-images-idx3-ubyte.gz", spec_.dir + "/train-labels-idx1-ubyte.gz",
                           spec_.train_samples);
  else
    train_ = synthetic(job, spec_.synthetic_samples, job.training.seed + 1);
}

Dataset TrainData::test() const {
  if (const DataFamily* f = data_family(spec_.kind)) return f->read(job_, true);
  if (spec_.kind == "text") {
    Dataset d = read_text_windows(spec_.dir, job_.model.seq_len, job_.model.kind == "bert", true, job_.training.seed + 4);
    if (spec_.test_samples > 0 && spec_.test_samples < d.size()) {
      d.inputs = d.inputs.narrow(0, 0, spec_.test_samples);
      d.labels = d.labels.narrow(0, 0, spec_.test_samples);
    }
    return d;
  }
  if (spec_.kind == "fashion-mnist")
    return read_idx_pair(spec_.dir + "/t10k-images-idx3-ubyte.gz", spec_.dir + "/t10k-labels-idx1-ubyte.gz",
                         spec_.test_samples);
  return synthetic(job_, spec_.test_samples > 0 ? spec_.test_samples : 1024, job_.training.seed + 2);
}

const at::Tensor& TrainData::permutation(int64_t epoch) {
  auto it = perms_.find(epoch);
  if (it != perms_.end()) return it->second;
  if (perms_.size() > 2) perms_.erase(perms_.begin());
  auto gen = seeded(job_.training.seed * 1000003ULL + static_cast<uint64_t>(epoch));
  return perms_[epoch] = at::randperm(train_.size(), gen);
}

Batch TrainData::microbatch(int64_t iteration, int index) {
  int64_t b = job_.training.microbatch_size, n = train_.size();
  int64_t first = iteration * job_.training.batch_size +
                  (static_cast<int64_t>(replica_) * job_.pipeline.microbatches + index) * b;
  std::vector<int64_t> idx(b);
  for (int64_t j = 0; j < b; ++j) {
    int64_t p = first + j;
    idx[j] = permutation(p / n)[p % n].item<int64_t>();
  }
  auto ix = at::tensor(idx, at::kLong);
  Batch batch{train_.inputs.index_select(0, ix), train_.labels.index_select(0, ix)};
  if (!device_.is_cpu()) batch = {batch.input.to(device_), batch.target.to(device_)};
  return batch;
}

}  // namespace pw::rt

#include "runtime/nas/fmnist_batches.h"

#include <ATen/CPUGeneratorImpl.h>
#include <zlib.h>

#include <stdexcept>
#include <vector>

namespace pw::rt::nas {
namespace {
std::vector<unsigned char> gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot read \"" + path + "\"");
  std::vector<unsigned char> out;
  unsigned char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  if (n < 0) throw std::runtime_error("\"" + path + "\": corrupt gzip data");
  return out;
}
std::uint32_t be32(const std::vector<unsigned char>& b, size_t at) {
  return (std::uint32_t(b[at]) << 24) | (std::uint32_t(b[at + 1]) << 16) | (std::uint32_t(b[at + 2]) << 8) | b[at + 3];
}
}  // namespace

FmnistBatches::FmnistBatches(const JobSpec& job) : batch_(job.training.microbatch_size) {
  std::string dir = job.data.is_object() ? job.data.value("dir", std::string("/usr/share/datasets/fashion-mnist"))
                                         : "/usr/share/datasets/fashion-mnist";
  std::int64_t limit = job.data.is_object() ? job.data.value("train_samples", 0) : 0;
  auto img = gunzip(dir + "/train-images-idx3-ubyte.gz");
  auto lab = gunzip(dir + "/train-labels-idx1-ubyte.gz");
  if (img.size() < 16 || be32(img, 0) != 2051) throw std::runtime_error(dir + "/train-images-idx3-ubyte.gz: not an IDX image file");
  if (lab.size() < 8 || be32(lab, 0) != 2049) throw std::runtime_error(dir + "/train-labels-idx1-ubyte.gz: not an IDX label file");
  std::int64_t n = be32(img, 4), rows = be32(img, 8), cols = be32(img, 12);
  if (limit > 0 && limit < n) n = limit;
  images_ = at::from_blob(img.data() + 16, {n, 1, rows, cols}, at::kByte).to(at::kFloat).div_(255.0);
  labels_ = at::from_blob(lab.data() + 8, {n}, at::kByte).to(at::kLong);
  auto g = at::make_generator<at::CPUGeneratorImpl>(job.training.seed + 12345);
  perm_ = at::randperm(n, g, at::kLong);
}

at::Tensor FmnistBatches::indices(std::int64_t b) const {
  std::int64_t n = perm_.size(0);
  auto pos = at::arange(b * batch_, (b + 1) * batch_, at::kLong).remainder_(n);
  return perm_.index_select(0, pos);
}

at::Tensor FmnistBatches::images(std::int64_t b) const { return images_.index_select(0, indices(b)); }
at::Tensor FmnistBatches::labels(std::int64_t b) const { return labels_.index_select(0, indices(b)); }

}  // namespace pw::rt::nas

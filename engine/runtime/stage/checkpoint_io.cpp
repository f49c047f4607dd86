// A stage's checkpoint: parameters, buffers and optimizer state.
#include "runtime/stage/stage_impl.h"

#include <torch/serialize.h>
#include <torch/utils.h>

#include <sstream>

#include "core/io/checked_write.h"

namespace pw::rt {

void StageExecutor::save(const std::string& file) const {
  torch::serialize::OutputArchive a;
  for (size_t i = 0; i < impl_->params.size(); ++i) a.write("p" + std::to_string(i), impl_->params[i]);
  for (size_t i = 0; i < impl_->buffers.size(); ++i) a.write("b" + std::to_string(i), impl_->buffers[i]);
  torch::serialize::OutputArchive o;
  impl_->optimizer->save(o);
  a.write("optimizer", o);
  // Serialised in memory, written by us: libtorch's file writer aborts the
  // process when a write fails (its destructor throws again), so a full disk
  // would read "killed by signal 6" instead of naming the file and ENOSPC.
  std::ostringstream bytes;
  a.save_to(bytes);
  write_file_atomically(file, bytes.view(), "stage state");
}

void StageExecutor::load(const std::string& file) {
  torch::serialize::InputArchive a;
  // Tensors saved on another device (a GPU run resumed on the CPU) land on this stage's.
  // The coordinator checked the file's size and digest; a file that still
  // does not load was not written by a stage of this engine: said so, with
  // its name, rather than libtorch's archive text.
  try {
    a.load_from(file, impl_->placement.device);
  } catch (const c10::Error&) {
    throw std::runtime_error(file + ": not a stage checkpoint this engine can load");
  }
  torch::NoGradGuard ng;
  for (size_t i = 0; i < impl_->params.size(); ++i) {
    at::Tensor t;
    a.read("p" + std::to_string(i), t);
    // A tensor-parallel shard (or a whole layer) saved under another split
    // has other shapes: said so, not as libtorch's broadcast error.
    if (t.sizes() != impl_->params[i].sizes())
      throw std::runtime_error(file + ": parameter " + std::to_string(i) + " was saved with shape " +
                               c10::str(t.sizes()) + ", this stage holds " + c10::str(impl_->params[i].sizes()) +
                               " (a checkpoint of another parallel.tensor split or model)");
    impl_->params[i].copy_(t);
  }
  for (size_t i = 0; i < impl_->buffers.size(); ++i) {
    at::Tensor t;
    if (a.try_read("b" + std::to_string(i), t)) impl_->buffers[i].copy_(t);
  }
  torch::serialize::InputArchive o;
  a.read("optimizer", o);
  impl_->optimizer->load(o);
  impl_->stepped = true;
  impl_->update_static();
}

std::vector<at::Tensor> load_stage_parameters(const std::string& file) {
  torch::serialize::InputArchive a;
  a.load_from(file);
  std::vector<at::Tensor> out;
  for (int i = 0;; ++i) {
    at::Tensor t;
    if (!a.try_read("p" + std::to_string(i), t)) break;
    out.push_back(t);
  }
  return out;
}

}  // namespace pw::rt

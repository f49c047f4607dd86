#include "core/spec/resume_check.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/spec/spec_error.h"

namespace pw {
namespace {

template <class T>
void same(const std::string& path, const T& saved, const T& now, const std::string& what) {
  if (saved == now) return;
  throw SpecError(path, "differs from the checkpoint's " + nlohmann::json(saved).dump() + " (now " +
                            nlohmann::json(now).dump() + "); a resume cannot change " + what);
}

}  // namespace

void check_resume_compatible(const JobSpec& checkpoint, const JobSpec& resumed) {
  const ModelSpec &a = checkpoint.model, &b = resumed.model;
  const std::string model = "the model";
  same("model.kind", a.kind, b.kind, model);
  // The fields each kind's layers are built from (parse_model in job_spec.cpp).
  same("model.layers", a.layers, b.layers, model);
  same("model.encoder_layers", a.encoder_layers, b.encoder_layers, model);
  same("model.decoder_layers", a.decoder_layers, b.decoder_layers, model);
  same("model.hidden", a.hidden, b.hidden, model);
  same("model.heads", a.heads, b.heads, model);
  same("model.seq_len", a.seq_len, b.seq_len, model);
  same("model.vocab", a.vocab, b.vocab, model);
  same("model.ffn_mult", a.ffn_mult, b.ffn_mult, model);
  same("model.input", a.input, b.input, model);
  same(a.kind == "cnn" ? "model.channels" : "model.widths", a.widths, b.widths, model);
  same("model.classes", a.classes, b.classes, model);
  same("model.image_size", a.image_size, b.image_size, model);
  same("model.in_channels", a.in_channels, b.in_channels, model);
  same("model.param_mb", a.param_mb, b.param_mb, model);
  same("model.output_mb", a.output_mb, b.output_mb, model);
  same("model.input.shape", a.input_shape, b.input_shape, model);
  same("model.input.dtype", a.input_dtype, b.input_dtype, model);
  // One checkpoint file per stage process, laid out by the chunks per device.
  same("pipeline.stages", checkpoint.pipeline.stages, resumed.pipeline.stages, "the stage count");
  same("pipeline.chunks", checkpoint.pipeline.chunks, resumed.pipeline.chunks, "the chunks per device");
  // The optimizer's state (Adam's moments, momentum) is in the checkpoint.
  same("training.optimizer", checkpoint.training.optimizer, resumed.training.optimizer, "the optimizer");
}

void check_resume_compatible(const std::string& run_dir, const JobSpec& resumed) {
  const std::string file = run_dir + "/job.json";
  if (!std::filesystem::exists(file)) return;
  JobSpec saved;
  try {
    saved = load_job(file);
  } catch (const SpecError& e) {
    throw SpecError(e.path(), file + " (the job the checkpoint was saved under): " + e.reason());
  }
  check_resume_compatible(saved, resumed);
}

}  // namespace pw

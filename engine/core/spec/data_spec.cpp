#include "core/spec/data_spec.h"

#include "core/spec/job_spec.h"
#include "core/spec/json_fields.h"
#include "core/spec/spec_bounds.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// A TorchScript model's input must match what the data kind produces
// (docs/torchscript.md).
void check_torchscript_data(const ModelSpec& m, const std::string& kind) {
  bool tokens = m.input_dtype == "int64";
  if (tokens && (kind == "synthetic" || kind == "fashion-mnist"))
    throw SpecError("data.kind", "a model with int64 (token) input trains on \"text\" or \"tensors\" data, not \"" +
                                     kind + "\"");
  if (kind == "fashion-mnist" && m.input_shape != std::vector<std::int64_t>{1, 28, 28})
    throw SpecError("model.input.shape", "fashion-mnist images are [1, 28, 28], got " + shape_text(m.input_shape));
  if (kind == "text" && m.input_shape.size() != 1)
    throw SpecError("model.input.shape", "text comes as windows of [seq_len] byte ids, got " + shape_text(m.input_shape));
  if (kind == "text" && m.classes != 256)
    throw SpecError("model.classes", "byte-level text predicts one of 256 bytes, got " + std::to_string(m.classes));
}

}  // namespace

DataSpec parse_data(JsonFields f, const ModelSpec& m) {
  DataSpec s;
  bool lm = m.kind == "gpt" || m.kind == "bert";
  s.kind = f.choice("kind", {"synthetic", "fashion-mnist", "text", "tensors"}, lm ? "text" : "synthetic");
  if (s.kind == "tensors")  // a torch.save file (docs/torchscript.md), kept in `dir`
    s.dir = f.str("path");
  else
    s.dir = f.str("dir", s.kind == "text" ? "/usr/share/games/fortunes" : "/usr/share/datasets/fashion-mnist");
  s.train_samples = f.integer<std::int64_t>("train_samples", 0, bounds::kSamples, 0);
  s.test_samples = f.integer<std::int64_t>("test_samples", 0, bounds::kSamples, 0);
  s.synthetic_samples = f.integer<std::int64_t>("samples", 1, bounds::kSamples, 1024);
  s.eval = f.boolean("eval", false);
  f.finish();
  bool ts_tokens = m.kind == "torchscript" && m.input_dtype == "int64";
  if (s.kind == "text" && !lm && !ts_tokens)
    throw SpecError("data.kind", "text data needs a gpt or bert model (or a torchscript one with int64 input)");
  if (m.kind == "torchscript") check_torchscript_data(m, s.kind);
  if (lm && s.kind != "text") throw SpecError("data.kind", "gpt and bert models train on \"text\" data");
  if (lm && m.vocab != 256)
    throw SpecError("model.vocab", "byte-level text needs vocab 256, got " + std::to_string(m.vocab));
  if (s.kind == "fashion-mnist") {
    if (m.kind == "mlp" && m.input != 784)
      throw SpecError("model.input", "fashion-mnist images have 784 pixels, got " + std::to_string(m.input));
    if (m.kind == "cnn" && (m.image_size != 28 || m.in_channels != 1))
      throw SpecError("model.image_size", "fashion-mnist needs image_size 28 and in_channels 1");
    if (m.classes != 10) throw SpecError("model.classes", "fashion-mnist has 10 classes, got " + std::to_string(m.classes));
  }
  return s;
}

}  // namespace pw

#include "core/spec/model_fields.h"

#include <algorithm>
#include <stdexcept>

namespace pw {

bool ModelField::applies_to(const std::string& kind) const {
  return kinds.empty() || std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

nlohmann::json ModelField::value(const ModelSpec& m) const {
  return std::visit([&](auto ptr) { return nlohmann::json(m.*ptr); }, member);
}

const std::vector<ModelField>& model_fields() {
  using M = ModelSpec;
  static const std::vector<std::string_view> transformers = {"transformer", "bert", "gpt"};
  static const std::vector<ModelField> rows = {
      {"model.kind", &M::kind, {}, true},
      {"model.layers", &M::layers, {"bert", "gpt", "uniform"}, true},
      {"model.encoder_layers", &M::encoder_layers, {"transformer"}, true},
      {"model.decoder_layers", &M::decoder_layers, {"transformer"}, true},
      {"model.hidden", &M::hidden, transformers, true},
      {"model.heads", &M::heads, transformers, true},
      {"model.seq_len", &M::seq_len, transformers, true},
      {"model.vocab", &M::vocab, transformers, true},
      {"model.ffn_mult", &M::ffn_mult, transformers, true},
      {"model.input", &M::input, {"mlp"}, true},
      {"model.widths", &M::widths, {"mlp"}, true},
      {"model.channels", &M::widths, {"cnn"}, true},
      {"model.classes", &M::classes, {"mlp", "cnn", "torchscript"}, true},
      {"model.image_size", &M::image_size, {"cnn"}, true},
      {"model.in_channels", &M::in_channels, {"cnn"}, true},
      {"model.param_mb", &M::param_mb, {"uniform"}, true},
      {"model.output_mb", &M::output_mb, {"uniform"}, true},
      {"model.input.shape", &M::input_shape, {"torchscript"}, true},
      {"model.input.dtype", &M::input_dtype, {"torchscript"}, true},
      {"model.precision", &M::precision, {}, false},
      {"model.fwd_ms", &M::fwd_ms, {"uniform"}, false},
      {"model.bwd_ms", &M::bwd_ms, {"uniform"}, false},
      {"model.activation_mb", &M::activation_mb, {"uniform"}, false},
      {"model.optimizer_ms", &M::optimizer_ms, {"uniform"}, false},
      {"model.profile", &M::profile, {}, false},
      {"model.profile_device", &M::profile_device, {}, false},
      {"model.path", &M::path, {"torchscript"}, false},
  };
  return rows;
}

const ModelField& model_field(std::string_view path) {
  for (const auto& r : model_fields())
    if (r.path == path) return r;
  throw std::logic_error("model field \"" + std::string(path) + "\" has no row in model_fields() (spec/model_fields.cpp)");
}

}  // namespace pw

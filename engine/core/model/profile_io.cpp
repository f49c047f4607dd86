#include "core/model/profile_io.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pw {

nlohmann::json profile_to_json(const ModelProfile& p) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : p.layers)
    layers.push_back({{"name", l.name},
                      {"type", l.type},
                      {"fwd_ms", l.fwd_ms},
                      {"bwd_ms", l.bwd_ms},
                      {"activation_bytes", l.activation_bytes},
                      {"input_bytes", l.input_bytes},
                      {"output_bytes", l.output_bytes},
                      {"param_bytes", l.param_bytes},
                      {"optimizer_bytes", l.optimizer_bytes},
                      {"optimizer_ms", l.optimizer_ms}});
  nlohmann::json j{{"format", "pipewright-profile"},
                   {"version", 1},
                   {"microbatch_size", p.microbatch_size},
                   {"device", p.device},
                   {"source", p.source},
                   {"layers", layers}};
  if (!p.cut_bytes.empty()) j["cut_bytes"] = p.cut_bytes;
  return j;
}

ModelProfile profile_from_json(const nlohmann::json& j) {
  if (j.value("format", "") != "pipewright-profile")
    throw std::runtime_error("not a Pipewright profile (\"format\" must be \"pipewright-profile\")");
  if (j.value("version", 0) != 1)
    throw std::runtime_error("unsupported profile version " + j.value("version", nlohmann::json()).dump());
  ModelProfile p;
  p.microbatch_size = j.value("microbatch_size", 1);
  p.device = j.value("device", "");
  p.source = j.value("source", "measured");
  int i = 0;
  for (const auto& e : j.at("layers")) {
    try {
      LayerProfile l;
      l.name = e.value("name", "layer" + std::to_string(i));
      l.type = e.value("type", "");
      l.fwd_ms = e.at("fwd_ms").get<double>();
      l.bwd_ms = e.at("bwd_ms").get<double>();
      l.activation_bytes = e.value("activation_bytes", std::uint64_t{0});
      l.input_bytes = e.value("input_bytes", std::uint64_t{0});
      l.output_bytes = e.value("output_bytes", std::uint64_t{0});
      l.param_bytes = e.value("param_bytes", std::uint64_t{0});
      l.optimizer_bytes = e.value("optimizer_bytes", std::uint64_t{0});
      l.optimizer_ms = e.value("optimizer_ms", 0.0);
      p.layers.push_back(l);
    } catch (const nlohmann::json::exception& ex) {
      throw std::runtime_error("layers[" + std::to_string(i) + "]: " + ex.what());
    }
    ++i;
  }
  if (j.contains("cut_bytes")) p.cut_bytes = j.at("cut_bytes").get<std::vector<std::uint64_t>>();
  return p;
}

ModelProfile load_profile_file(const std::string& path, int microbatch_size) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open profile \"" + path + "\"");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path + ": not a Pipewright profile JSON");
  try {
    return profile_from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

void save_profile_file(const ModelProfile& p, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write profile \"" + path + "\"");
  out << profile_to_json(p).dump(1) << "\n";
}

}  // namespace pw

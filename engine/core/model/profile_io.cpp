#include "core/model/profile_io.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/io/checked_write.h"
#include "core/model/pipedream_graph.h"
#include "core/model/profile_retarget.h"
#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"

namespace pw {

nlohmann::json profile_to_json(const ModelProfile& p) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : p.layers)
    layers.push_back({{"name", l.name},
                      {"type", l.type},
                      {"fwd_ms", l.fwd_ms},
                      {"bwd_ms", l.bwd_ms},
                      {"activation_bytes", l.activation_bytes},
                      {"workspace_bytes", l.workspace_bytes},
                      {"input_bytes", l.input_bytes},
                      {"output_bytes", l.output_bytes},
                      {"param_bytes", l.param_bytes},
                      {"optimizer_bytes", l.optimizer_bytes},
                      {"optimizer_ms", l.optimizer_ms}});
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const LayerProfile& l = p.layers[i];
    // Only when known: a profile without it splits the backward by rule.
    if (l.bwd_weight_ms >= 0) layers[i]["bwd_weight_ms"] = l.bwd_weight_ms;
    if (l.fwd_fixed_ms > 0) layers[i]["fwd_fixed_ms"] = l.fwd_fixed_ms;
    if (l.bwd_fixed_ms > 0) layers[i]["bwd_fixed_ms"] = l.bwd_fixed_ms;
    if (l.param_tensors > 0) layers[i]["param_tensors"] = l.param_tensors;
    if (!l.by_microbatch.empty()) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& r : l.by_microbatch) {
        nlohmann::json row{{"microbatch", r.microbatch}, {"fwd_ms", r.fwd_ms}, {"bwd_ms", r.bwd_ms}};
        if (r.bwd_weight_ms >= 0) row["bwd_weight_ms"] = r.bwd_weight_ms;
        rows.push_back(row);
      }
      layers[i]["by_microbatch"] = rows;
    }
  }
  nlohmann::json j{{"format", "pipewright-profile"},
                   {"version", 2},
                   {"microbatch_size", p.microbatch_size},
                   {"device", p.device},
                   {"source", p.source},
                   {"layers", layers}};
  if (!p.cut_bytes.empty()) j["cut_bytes"] = p.cut_bytes;
  if (!p.inputs.empty()) j["inputs"] = p.inputs;
  // What was done to the costs after measuring (an in-situ calibration):
  // it travels with the file so every later plan says so.
  if (!p.assumptions.empty()) j["notes"] = p.assumptions;
  if (p.host_costs && !p.host_costs->empty()) j["host_costs"] = host_costs_to_json(*p.host_costs);
  return j;
}

ModelProfile profile_from_json(const nlohmann::json& j) {
  if (j.value("format", "") != "pipewright-profile")
    throw std::runtime_error("not a Pipewright profile (\"format\" must be \"pipewright-profile\")");
  // Version 1 knew one microbatch size; 2 adds the per-size tables, the
  // fixed parts and the tensor counts, all optional, so 1 reads as 2.
  const int version = j.value("version", 0);
  if (version != 1 && version != 2)
    throw std::runtime_error("unsupported profile version " + j.value("version", nlohmann::json()).dump() +
                             " (this build reads 1 and 2)");
  ModelProfile p;
  p.microbatch_size = j.value("microbatch_size", 1);
  p.device = j.value("device", "");
  p.source = j.value("source", "measured");
  if (j.contains("notes")) p.assumptions = j.at("notes").get<std::vector<std::string>>();
  if (j.contains("host_costs")) p.host_costs = host_costs_from_json(j.at("host_costs"));
  int i = 0;
  for (const auto& e : j.at("layers")) {
    try {
      LayerProfile l;
      l.name = e.value("name", "layer" + std::to_string(i));
      l.type = e.value("type", "");
      l.fwd_ms = e.at("fwd_ms").get<double>();
      l.bwd_ms = e.at("bwd_ms").get<double>();
      l.bwd_weight_ms = e.value("bwd_weight_ms", -1.0);
      l.activation_bytes = e.value("activation_bytes", std::uint64_t{0});
      l.workspace_bytes = e.value("workspace_bytes", std::uint64_t{0});
      l.input_bytes = e.value("input_bytes", std::uint64_t{0});
      l.output_bytes = e.value("output_bytes", std::uint64_t{0});
      l.param_bytes = e.value("param_bytes", std::uint64_t{0});
      l.optimizer_bytes = e.value("optimizer_bytes", std::uint64_t{0});
      l.optimizer_ms = e.value("optimizer_ms", 0.0);
      l.fwd_fixed_ms = e.value("fwd_fixed_ms", 0.0);
      l.bwd_fixed_ms = e.value("bwd_fixed_ms", 0.0);
      l.param_tensors = e.value("param_tensors", 0);
      if (l.fwd_ms < 0 || l.bwd_ms < 0 || l.fwd_fixed_ms < 0 || l.bwd_fixed_ms < 0)
        throw std::runtime_error("times must be >= 0");
      if (e.contains("by_microbatch")) {
        int last = 0;
        for (const auto& r : e.at("by_microbatch")) {
          MicrobatchTimes t;
          t.microbatch = r.at("microbatch").get<int>();
          t.fwd_ms = r.at("fwd_ms").get<double>();
          t.bwd_ms = r.at("bwd_ms").get<double>();
          t.bwd_weight_ms = r.value("bwd_weight_ms", -1.0);
          if (t.microbatch <= last)
            throw std::runtime_error("by_microbatch: sizes must be positive and ascending, got " +
                                     std::to_string(t.microbatch) + " after " + std::to_string(last));
          if (t.fwd_ms < 0 || t.bwd_ms < 0) throw std::runtime_error("by_microbatch: times must be >= 0");
          last = t.microbatch;
          l.by_microbatch.push_back(t);
        }
      }
      p.layers.push_back(l);
    } catch (const nlohmann::json::exception& ex) {
      throw std::runtime_error("layers[" + std::to_string(i) + "]: " + ex.what());
    }
    ++i;
  }
  if (j.contains("cut_bytes")) p.cut_bytes = j.at("cut_bytes").get<std::vector<std::uint64_t>>();
  if (p.size() > 0 && !p.cut_bytes.empty() && p.cut_bytes.size() != static_cast<size_t>(p.size() - 1))
    throw std::runtime_error("cut_bytes has " + std::to_string(p.cut_bytes.size()) + " entries, expected " +
                             std::to_string(p.size() - 1) + " (layers - 1)");
  if (j.contains("inputs")) {
    p.inputs = j.at("inputs").get<std::vector<std::vector<int>>>();
    if (p.inputs.size() != p.layers.size())
      throw std::runtime_error("inputs has " + std::to_string(p.inputs.size()) + " entries, expected one per layer (" +
                               std::to_string(p.size()) + ")");
    for (int i = 0; i < p.size(); ++i)
      for (int u : p.inputs[i])
        if (u < 0 || u >= i)
          throw std::runtime_error("inputs[" + std::to_string(i) + "]: producer " + std::to_string(u) +
                                   " must be an earlier layer");
  }
  return p;
}

ModelProfile profile_from_text(const std::string& text, const std::string& name, int microbatch_size) {
  ModelProfile p;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    nlohmann::json j;
    try {
      j = parse_bounded_json(text);  // depth-bounded; a 1e400 names its path
    } catch (const SpecError& e) {
      throw std::runtime_error(name + ": not valid JSON (a Pipewright profile was expected): " + e.what());
    }
    try {
      p = profile_from_json(j);
    } catch (const std::exception& e) {
      throw std::runtime_error(name + ": " + e.what());
    }
  } else if (looks_like_pipedream_graph(text)) {
    p = pipedream_graph_to_profile(parse_pipedream_graph(text, name), "pipedream:" + name);
    if (p.microbatch_size > 0)
      p.assumptions.push_back(name + ": PipeDream profile taken at minibatch " + std::to_string(p.microbatch_size) +
                              " (as the file's data tells)");
  } else {
    throw std::runtime_error(name + ": neither a Pipewright profile (JSON) nor a PipeDream graph.txt "
                                    "(\"nodeID -- description -- forward_compute_time=...\" lines)");
  }
  if (microbatch_size > 0 && p.microbatch_size <= 0)
    p.assumptions.push_back(name + ": profiled minibatch unknown; costs used as measured");
  return rescale_microbatch(p, microbatch_size);
}

ModelProfile load_profile_file(const std::string& path, int microbatch_size) {
  std::string text;
  try {
    text = read_bounded_file(path, kMaxProfileFileBytes, "profile");
  } catch (const SpecError& e) {  // "$" would be the job's root here: the reason names the file
    throw std::runtime_error(e.reason());
  }
  return profile_from_text(text, path, microbatch_size);
}

// Through the checked writer (core/io/checked_write.h); a file the user
// names is first reserved under the output rule (OutputByOther, profile -o).
void save_profile_file(const ModelProfile& p, const std::string& path) {
  write_file_atomically(path, profile_to_json(p).dump(1) + "\n", "profile");
}

void save_profile_pipedream(const ModelProfile& p, const std::string& path) {
  write_file_atomically(path, pipedream_graph_text(p), "profile");
}

}  // namespace pw

#include "core/cluster/transport_choice.h"

#include <map>
#include <stdexcept>
#include <utility>

#include "core/spec/spec_error.h"

namespace pw {
namespace {

const char* kField = "cluster.backend";
const char* kAlternatives = " (use \"auto\" or \"gloo\")";

// "stage 2", "stages 0 and 1", "stages 0, 1 and 3".
std::string stage_list(const std::vector<int>& s) {
  if (s.size() == 1) return "stage " + std::to_string(s[0]);
  std::string out = "stages ";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i == 0 ? "" : i + 1 == s.size() ? " and " : ", ") + std::to_string(s[i]);
  return out;
}

std::string plural(size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

std::vector<std::string> transport_backend_choices() { return {"auto", "gloo", "nccl"}; }

TransportChoice choose_transport(const std::string& requested, const std::vector<StageSite>& stages,
                                 bool nccl_built) {
  if (requested != "auto" && requested != "gloo" && requested != "nccl")
    throw SpecError(kField, "must be one of auto, gloo, nccl, got \"" + requested + "\"");
  if (stages.empty()) throw std::invalid_argument("choose_transport: no stages");
  TransportChoice c;
  c.stages.resize(stages.size());
  std::vector<int> without_gpu;
  std::map<std::pair<std::string, int>, std::vector<int>> on_gpu;  // (host, index) -> stages
  std::map<std::string, int> hosts;
  for (size_t r = 0; r < stages.size(); ++r) {
    const StageSite& s = stages[r];
    if (s.local_rank < 0 || s.visible_gpus < 0)
      throw std::invalid_argument("choose_transport: stage " + std::to_string(r) + " has a negative local rank or GPU count");
    ++hosts[s.host];
    if (s.visible_gpus == 0) {
      without_gpu.push_back(static_cast<int>(r));
      continue;
    }
    c.stages[r].cuda_index = s.local_rank % s.visible_gpus;
    on_gpu[{s.host, c.stages[r].cuda_index}].push_back(static_cast<int>(r));
  }
  // The first GPU (in host, index order) that holds more than one stage.
  const std::pair<const std::pair<std::string, int>, std::vector<int>>* shared = nullptr;
  for (const auto& g : on_gpu)
    if (g.second.size() > 1) {
      shared = &g;
      break;
    }
  auto shared_text = [&] {
    std::string where = stage_list(shared->second) + " share cuda:" + std::to_string(shared->first.second);
    return hosts.size() > 1 ? where + " on host " + shared->first.first : where;
  };
  const bool all_gpu = without_gpu.empty();
  const bool no_gpu = without_gpu.size() == stages.size();

  if (requested == "nccl") {
    if (no_gpu)
      throw SpecError(kField, std::string("\"nccl\" needs CUDA, and no stage sees a GPU") + kAlternatives);
    if (!all_gpu) {
      const StageSite& s = stages[without_gpu.front()];
      throw SpecError(kField, "\"nccl\" needs a GPU on every stage; " + stage_list({without_gpu.front()}) +
                                  " (host " + s.host + ") sees none" + kAlternatives);
    }
    if (!nccl_built)
      throw SpecError(kField, std::string("\"nccl\" needs a build against a CUDA libtorch with NCCL; this one "
                                          "has none") + kAlternatives);
    if (shared)
      throw SpecError(kField, "NCCL cannot send between two stages on one GPU: " + shared_text() +
                                  " (use \"auto\" or \"gloo\", which stage the tensors through host memory)");
  }
  if (all_gpu && !shared && nccl_built && requested != "gloo") {
    c.backend = "nccl";
    c.reason = "nccl: " + plural(stages.size(), "stage") +
               (hosts.size() > 1 ? " on " + plural(hosts.size(), "host") : std::string()) + ", one GPU each";
    return c;
  }
  c.backend = "gloo";
  for (auto& p : c.stages) p.host_staged = p.cuda_index >= 0;
  if (no_gpu) {
    c.reason = "gloo: no CUDA";
    return c;
  }
  std::string why = requested == "gloo" ? "cluster.backend is \"gloo\""
                    : !all_gpu          ? stage_list({without_gpu.front()}) + " sees no GPU"
                    : shared            ? shared_text()
                                        : "this build has no NCCL";
  c.reason = "gloo over host-staged copies: " + why;
  return c;
}

}  // namespace pw

#include "runtime/transport_agreement.h"

#include <torch/cuda.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "runtime/process_group.h"
#include "runtime/protocol.h"

namespace pw::rt {
namespace {
std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}
int visible_gpus() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }
}  // namespace

StageSite local_stage_site(int local_rank) { return {host_name(), local_rank, visible_gpus()}; }

TransportChoice agree_transport(c10d::Store& store, int rank, int world, int local_rank, const std::string& requested) {
  StageSite me = local_stage_site(local_rank);
  nlohmann::json j{{"host", me.host}, {"local_rank", me.local_rank}, {"gpus", me.visible_gpus}};
  std::string text = j.dump();
  store.set(keys::site(rank), std::vector<std::uint8_t>(text.begin(), text.end()));
  std::vector<StageSite> sites;
  for (int r = 0; r < world; ++r) {
    auto bytes = store.get(keys::site(r));
    auto s = nlohmann::json::parse(std::string(bytes.begin(), bytes.end()));
    sites.push_back({s.at("host").get<std::string>(), s.at("local_rank").get<int>(), s.at("gpus").get<int>()});
  }
  return choose_transport(requested, sites, nccl_built());
}

TransportChoice local_transport(const std::string& requested, int stages) {
  int gpus = visible_gpus();
  std::vector<StageSite> sites;
  for (int r = 0; r < stages; ++r) sites.push_back({"localhost", r, gpus});
  return choose_transport(requested, sites, nccl_built());
}

}  // namespace pw::rt

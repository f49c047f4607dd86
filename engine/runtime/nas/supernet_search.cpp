#include "runtime/nas/supernet_search.h"

#include <ATen/Parallel.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace pw::rt::nas {

CnnSupernet load_trained_supernet(const pw::nas::NasJob& nj, const std::string& run_dir) {
  const int last = nj.space.size() - 1;
  CnnSupernet net(nj.job, nj.space, pw::nas::StageSlots{0, last});
  // Stage files in rank order must tile the choice layers.
  int next = 0;
  for (int r = 0; next <= last; ++r) {
    std::string meta = run_dir + "/stage" + std::to_string(r) + ".json";
    std::ifstream in(meta);
    if (!in) throw std::runtime_error("cannot read \"" + meta + "\" (layers " + std::to_string(next) + ".." +
                                      std::to_string(last) + " missing): run the supernet with --out " + run_dir);
    auto j = nlohmann::json::parse(in);
    int first = j.at("first_layer").get<int>(), until = j.at("last_layer").get<int>();
    if (first != next) throw std::runtime_error("\"" + meta + "\": starts at layer " + std::to_string(first) +
                                                ", expected " + std::to_string(next));
    net.load(run_dir + "/stage" + std::to_string(r) + ".bin", first, until);
    next = until + 1;
  }
  return net;
}

double subnet_accuracy(const CnnSupernet& net, const pw::nas::Subnet& s, const Dataset& val) {
  at::NoGradGuard ng;
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < val.size(); i += 500) {
    std::int64_t n = std::min<std::int64_t>(500, val.size() - i);
    auto logits = net.head(net.layers(s, net.stem(val.inputs.narrow(0, i, n))));
    correct += logits.argmax(1).eq(val.labels.narrow(0, i, n)).sum().item<std::int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(val.size());
}

std::int64_t subnet_parameters(const CnnSupernet& net, const pw::nas::Subnet& s) {
  std::int64_t n = 0;
  for (const auto& t : {net.stem_params().first, net.stem_params().second, net.head_params().first,
                        net.head_params().second})
    n += t.numel();
  for (int l = 0; l < static_cast<int>(s.size()); ++l)
    for (const auto& p : net.candidate(l, s[l]).params) n += p.numel();
  return n;
}

SupernetSearch search_trained_supernet(const std::string& job_file, const std::vector<std::string>& overrides,
                                       const std::string& run_dir) {
  at::set_num_threads(1);
  pw::nas::NasJob nj = pw::nas::prepare_nas_job(load_job(job_file, overrides));
  CnnSupernet net = load_trained_supernet(nj, run_dir);
  Dataset val = TrainData(nj.job).test();
  SupernetSearch out;
  out.validation_samples = static_cast<int>(val.size());
  auto accuracy = [&](const pw::nas::Subnet& s) { return subnet_accuracy(net, s, val); };
  out.evolution = pw::nas::evolutionary_search(nj.space, nj.search, accuracy);
  out.random = pw::nas::random_search(nj.space, out.evolution.evaluations, nj.search.seed, accuracy);
  return out;
}

}  // namespace pw::rt::nas

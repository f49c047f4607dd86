// pw_nas_worker: the CPU supernet trainer.
//   pw_nas_worker worker JOB --rank R --world P --store FILE --out DIR [--window W] [--no-csp] [--set k=v]...
//       [--checkpoint-every N --checkpoint-dir DIR] [--resume-from CHECKPOINT_DIR]
//       one pipeline stage (started by the launcher)
//   pw_nas_worker run JOB [--workers P] [--window W] [--no-csp] [--out DIR] [--checkpoint-every N]
//                         [--resume RUN_DIR] [--set k=v]...
//       launches P workers and prints subnets/s, per-stage parameter hashes and the last losses
//   pw_nas_worker bench JOB [--workers P] [--set k=v]...
//       CSP against a one-subnet-at-a-time pipeline on the same job: subnets/s and the ratio
//   pw_nas_worker search JOB --out DIR [--results FILE] [--set k=v]...
//       after `run ... --out DIR`: evolutionary search (search_space.search) over the trained
//       supernet, subnets scored by validation accuracy, against random search with the same budget;
//       --results: every scored subnet (choices, accuracy, parameters) as JSON, for `pipewright search`
//   pw_nas_worker export JOB --out DIR --subnet c0,c1,... --model FILE [--results FILE] [--set k=v]...
//       that subnet of the trained supernet as standalone TorchScript; JSON (to --results, else
//       stdout): its accuracy here and that of the written file loaded back
#include <unistd.h>

#include <ATen/Parallel.h>
#include <torch/script.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/io/checked_write.h"
#include "core/spec/spec_error.h"
#include "runtime/nas/csp_launch.h"
#include "runtime/nas/csp_trainer.h"
#include "runtime/nas/subnet_export.h"
#include "runtime/nas/supernet_search.h"

using namespace pw::rt::nas;

namespace {
int usage() {
  std::cerr << "usage: pw_nas_worker worker|run|bench|search|export JOB [--workers P] [--rank R --world P --store FILE] [--out DIR]\n"
               "                     [--window W] [--no-csp] [--set key=value]...\n"
               "                     [--results FILE] [--subnet c0,c1,... --model FILE]\n";
  return 2;
}

// Every scored subnet with its parameter count, which needs the trained
// supernet's tensors (the accuracy the search gave it is kept as scored).
void write_results(const CspWorkerConfig& w, const std::string& run_dir, const SupernetSearch& r,
                   const std::string& file) {
  auto nj = pw::nas::prepare_nas_job(pw::load_job(w.job_file, w.overrides));
  CnnSupernet net = load_trained_supernet(nj, run_dir);
  auto list = [&](const pw::nas::SearchResult& s) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& [subnet, acc] : s.scored)
      a.push_back({{"choices", subnet}, {"accuracy", acc}, {"parameters", subnet_parameters(net, subnet)}});
    return a;
  };
  nlohmann::json j{{"validation_samples", r.validation_samples},
                   {"evolution", list(r.evolution)},
                   {"random", list(r.random)}};
  pw::write_file_atomically(file, j.dump() + "\n", "search results");
}

int export_subnet(const CspWorkerConfig& w, const std::string& run_dir, const std::string& text,
                  const std::string& model, const std::string& results) {
  if (text.empty() || model.empty()) throw std::invalid_argument("export needs --subnet c0,c1,... and --model FILE");
  at::set_num_threads(1);  // as the search scored it
  auto nj = pw::nas::prepare_nas_job(pw::load_job(w.job_file, w.overrides));
  auto subnet = pw::nas::parse_subnet_list(text, "--subnet", nj.space);
  if (subnet.size() != 1) throw std::invalid_argument("--subnet: one subnet, got " + std::to_string(subnet.size()));
  CnnSupernet net = load_trained_supernet(nj, run_dir);
  pw::rt::Dataset val = pw::rt::TrainData(nj.job).test();
  export_subnet_torchscript(net, subnet[0], model);
  // The written file, loaded back and run on the same data: what a user
  // of the file gets, not only what this process holds.
  torch::jit::Module loaded = torch::jit::load(model);
  loaded.eval();
  at::NoGradGuard ng;
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < val.size(); i += 500) {
    std::int64_t n = std::min<std::int64_t>(500, val.size() - i);
    auto logits = loaded.forward({val.inputs.narrow(0, i, n)}).toTensor();
    correct += logits.argmax(1).eq(val.labels.narrow(0, i, n)).sum().item<std::int64_t>();
  }
  nlohmann::json j{{"choices", subnet[0]},
                   {"accuracy", subnet_accuracy(net, subnet[0], val)},
                   {"file_accuracy", static_cast<double>(correct) / static_cast<double>(val.size())},
                   {"parameters", subnet_parameters(net, subnet[0])},
                   {"validation_samples", val.size()}};
  if (results.empty()) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  pw::write_file_atomically(results, j.dump() + "\n", "export results");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() < 2) return usage();
  std::string mode = a[0];
  CspWorkerConfig w;
  w.job_file = a[1];
  int workers = 2;
  std::string results, subnet_text, model_file, error_file, resume_dir;
  std::string out = (std::filesystem::temp_directory_path() / ("pw-nas-" + std::to_string(getpid()))).string();
  try {
    for (size_t i = 2; i < a.size(); ++i) {
      auto val = [&]() -> std::string {
        if (i + 1 >= a.size()) throw std::invalid_argument(a[i] + " needs a value");
        return a[++i];
      };
      if (a[i] == "--rank") w.rank = std::stoi(val());
      else if (a[i] == "--world") w.world = std::stoi(val());
      else if (a[i] == "--store") w.store_file = val();
      else if (a[i] == "--out") out = val();
      else if (a[i] == "--window") w.window = std::stoi(val());
      else if (a[i] == "--workers") workers = std::stoi(val());
      else if (a[i] == "--set") w.overrides.push_back(val());
      else if (a[i] == "--no-csp") w.csp = false;
      else if (a[i] == "--results") results = val();
      else if (a[i] == "--subnet") subnet_text = val();
      else if (a[i] == "--model") model_file = val();
      else if (a[i] == "--t0") w.t0_ns = std::stoll(val());
      else if (a[i] == "--error-file") error_file = val();
      else if (a[i] == "--checkpoint-every") w.checkpoint_every = std::stoi(val());
      else if (a[i] == "--checkpoint-dir") w.checkpoint_dir = val();
      else if (a[i] == "--resume-from") w.resume_from = val();
      else if (a[i] == "--resume") resume_dir = val();
      else if (a[i] == "--stop-file") w.stop_file = val();
      else throw std::invalid_argument("unknown option " + a[i]);
    }
    w.out_dir = out;
    if (w.checkpoint_every > 0 && w.checkpoint_dir.empty()) w.checkpoint_dir = out + "/checkpoint";
    if (mode == "worker") {
      if (run_csp_worker(w)) {
        // Stopped early: receiver threads wait on subnets that never come.
        std::fflush(nullptr);
        std::_Exit(0);
      }
      return 0;
    }
    CspLaunch l;
    l.worker_binary = argv[0][0] == '/' ? argv[0] : std::filesystem::absolute(argv[0]).string();
    l.job_file = w.job_file;
    l.overrides = w.overrides;
    l.workers = workers;
    l.out_dir = out;
    l.csp = w.csp;
    l.window = w.window;
    l.checkpoint_every = w.checkpoint_every;
    l.resume_dir = resume_dir;
    if (mode == "run") {
      auto r = launch_csp_run(l);
      std::printf("%d subnets on %d workers in %.2f s: %.2f subnets/s\n", r.subnets, workers, r.seconds, r.subnets_per_s());
      for (size_t s = 0; s < r.stage_hashes.size(); ++s) std::printf("stage %zu parameter hash %016llx\n", s, (unsigned long long)r.stage_hashes[s]);
      if (!r.losses.empty()) std::printf("loss: first %.4f, last %.4f\n", r.losses.front(), r.losses.back());
      return 0;
    }
    if (mode == "search") {
      auto r = search_trained_supernet(w.job_file, w.overrides, out);
      std::printf("evolutionary search: %d subnets scored on %d validation samples\n", r.evolution.evaluations,
                  r.validation_samples);
      std::printf("  best  %s  accuracy %.4f\n", pw::nas::to_string(r.evolution.best).c_str(), r.evolution.best_score);
      std::printf("random search, same budget: best %s  accuracy %.4f\n", pw::nas::to_string(r.random.best).c_str(),
                  r.random.best_score);
      if (!results.empty()) write_results(w, out, r, results);
      return 0;
    }
    if (mode == "export") return export_subnet(w, out, subnet_text, model_file, results);
    if (mode == "bench") {
      l.out_dir = out + "/seq";
      l.window = 1;
      auto seq = launch_csp_run(l);
      l.out_dir = out + "/csp";
      l.window = w.window;
      auto csp = launch_csp_run(l);
      std::printf("fmnist supernet, %d subnets, %d workers (CPU, 1 thread each)\n", csp.subnets, workers);
      std::printf("  sequential pipeline  %.2f subnets/s\n  CSP                  %.2f subnets/s  (x%.2f)\n",
                  seq.subnets_per_s(), csp.subnets_per_s(), csp.subnets_per_s() / seq.subnets_per_s());
      std::printf("  identical weights: %s\n", seq.stage_hashes == csp.stage_hashes ? "yes" : "NO");
      return 0;
    }
    return usage();
  } catch (const pw::SpecError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "pw_nas_worker " << mode << " (rank " << w.rank << "): " << e.what() << std::endl;
    if (!error_file.empty()) {  // the launcher names the cause with it
      try {
        pw::write_file_atomically(error_file, e.what(), "worker error");
      } catch (const std::exception&) {
      }
    }
    // A failed stage leaves receiver threads blocked on its neighbours:
    // exit now rather than run destructors that would wait for them.
    if (mode == "worker") std::_Exit(1);
    return 1;
  }
}

// `pipewright launch`: the commands that start one run across several hosts,
// torchrun-style (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK),
// as shell lines per host or as a Slurm batch script. It starts nothing
// itself: clusters have their own launchers (ssh, srun, Kubernetes).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/job_inputs.h"
#include "core/io/checked_write.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

namespace pw::cli {
namespace {

std::vector<std::string> split_hosts(const std::string& s) {
  std::vector<std::string> hosts;
  std::stringstream ss(s);
  std::string h;
  while (std::getline(ss, h, ','))
    if (!h.empty()) hosts.push_back(h);
  return hosts;
}

struct Layout {
  std::vector<std::string> hosts;
  int world = 0;     // worker processes: stages x replicas x tensor ranks
  int replicas = 1;  // parallel.data
  int tensors = 1;   // parallel.tensor
  int per_host = 0;
  int port = 29500;
  std::string ifname;
  std::string job;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string shell_script(const Layout& L) {
  std::ostringstream o;
  o << "# Pipewright run across " << L.hosts.size() << " hosts, " << L.world / (L.replicas * L.tensors) << " stages x "
    << L.replicas << " replicas";
  if (L.tensors > 1)
    o << " x " << L.tensors << " tensor ranks (one worker each; RANK = (stage x replicas + replica) x " << L.tensors
      << " + tensor rank).\n";
  else
    o << " (one worker each; RANK = stage x replicas + replica).\n";
  o
    << "# The coordinator on " << L.hosts[0] << " hosts the rendezvous (c10d TCPStore on port " << L.port
    << ", reachable from every host);\n# tensors flow worker to worker over Gloo.\n";
  for (size_t h = 0; h < L.hosts.size(); ++h) {
    o << "\n# on " << L.hosts[h] << ":\n";
    if (h == 0) o << "pipewright run " << quote(L.job) << " --attach --port " << L.port << " &\n";
    for (int l = 0; l < L.per_host; ++l) {
      int rank = static_cast<int>(h) * L.per_host + l;
      if (rank >= L.world) break;
      o << "MASTER_ADDR=" << L.hosts[0] << " MASTER_PORT=" << L.port << " WORLD_SIZE=" << L.world << " RANK=" << rank
        << " LOCAL_RANK=" << l;
      if (!L.ifname.empty()) o << " GLOO_SOCKET_IFNAME=" << L.ifname;
      o << " pipewright-worker &\n";
    }
  }
  return o.str();
}

std::string sbatch_script(const Layout& L) {
  std::ostringstream o;
  o << "#!/bin/bash\n"
    << "#SBATCH --job-name=pipewright\n"
    << "#SBATCH --nodes=" << L.hosts.size() << "\n"
    << "#SBATCH --ntasks=" << L.world << "\n"
    << "#SBATCH --ntasks-per-node=" << L.per_host << "\n"
    << (L.tensors > 1 ? "# One task per stage, replica and tensor rank (RANK = (stage x " + std::to_string(L.replicas) +
                            " + replica) x " + std::to_string(L.tensors) + " + tensor rank)"
                      : "# One task per stage and replica (RANK = stage x " + std::to_string(L.replicas) + " + replica)")
    << "; the coordinator runs on the first node.\n"
    << "set -euo pipefail\n"
    << "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
    << "export MASTER_PORT=" << L.port << "\n"
    << "export WORLD_SIZE=" << L.world << "\n";
  if (!L.ifname.empty()) o << "export GLOO_SOCKET_IFNAME=" << L.ifname << "\n";
  o << "pipewright run " << quote(L.job) << " --attach --port \"$MASTER_PORT\" &\n"
    << "coordinator=$!\n"
    << "srun --kill-on-bad-exit=1 bash -c 'RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID exec pipewright-worker'\n"
    << "wait \"$coordinator\"\n";
  return o.str();
}
struct LaunchArgs {
  std::string job_file, hosts, ifname, sbatch, output;
  std::vector<std::string> overrides;
  int per_host = 0, port = 29500;
  bool overwrite = false;
};

int run_launch(const LaunchArgs& a) {
  Layout L;
  L.job = a.job_file;
  JobSpec job = load_job(L.job, a.overrides);
  if (!a.overrides.empty())
    throw UsageError("--set is not carried to remote hosts; write the overrides into the job file");
  L.hosts = split_hosts(a.hosts);
  if (L.hosts.empty()) throw UsageError("--hosts h1,h2,... names no host");
  // The workers' rank layout is the core's placement rule: RANK = (stage x
  // parallel.data + replica) x parallel.tensor + tensor rank, a stage's
  // tensor ranks neighbours, then its replicas, so hosts filled rank by rank
  // keep a tensor group (all-reduces inside every layer) on one host, and a
  // stage's gradient all-reduce too where its replicas fit (docs/engine.md,
  // "Data parallelism", "Tensor parallelism").
  if (job.parallel_searched())
    throw SpecError(job.pipeline.stages_auto ? "pipeline.stages"
                    : job.parallel.data_auto ? "parallel.data"
                                             : "parallel.tensor",
                    "\"auto\" is chosen by the planner: run `pipewright plan` and write the stages and replicas it "
                    "chooses into the job every host reads");
  L.replicas = job.parallel.data;
  L.tensors = job.parallel.tensor;
  L.world = job.pipeline.stages * L.replicas * L.tensors;
  int hosts = static_cast<int>(L.hosts.size());
  L.per_host = a.per_host > 0 ? a.per_host : (L.world + hosts - 1) / hosts;
  if (L.per_host * hosts < L.world)
    throw UsageError(std::to_string(hosts) + " hosts x " + std::to_string(L.per_host) + " workers cannot hold " +
                     std::to_string(L.world) + " workers (pipeline.stages x parallel.data" +
                     (L.tensors > 1 ? " x parallel.tensor)" : ")"));
  L.port = a.port;
  L.ifname = a.ifname;
  std::string text = !a.sbatch.empty() ? sbatch_script(L) : shell_script(L);
  const std::string& out_path = !a.sbatch.empty() ? a.sbatch : a.output;
  if (!out_path.empty()) {
    write_output({out_path, !a.sbatch.empty() ? "--sbatch" : "--output", a.overwrite, job_inputs(a.job_file, job)}, text);
    std::cout << "wrote " << out_path << "\n";
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace

Action define_launch(Args& args) {
  auto a = std::make_shared<LaunchArgs>();
  args.positional("JOB.json", a->job_file, "the job file (every host reads it)");
  args.text("--hosts", a->hosts, "h1,h2,...", "the hosts, the coordinator's first");
  args.required("--hosts");
  args.integer("--nproc-per-host", a->per_host, 1, 4096, "N", "workers per host (default: the stages spread evenly)");
  args.integer("--port", a->port, 1, 65535, "P", "rendezvous port on the first host (default 29500)");
  args.text("--ifname", a->ifname, "IF", "network interface for Gloo (GLOO_SOCKET_IFNAME)");
  args.output("--sbatch", a->sbatch, "FILE", "write a Slurm batch script");
  args.output("--output", a->output, "FILE", "write the shell commands to FILE instead of printing them");
  args.overwrite(a->overwrite);
  args.excludes("--sbatch", "--output");
  // Declared so that the refusal says why.
  args.overrides(a->overrides, "refused: overrides would not reach the remote hosts; write them into the job file");
  return [a] { return run_launch(*a); };
}

}  // namespace pw::cli

// `pipewright launch`: the commands that start one run across several hosts,
// torchrun-style (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK),
// as shell lines per host or as a Slurm batch script. It starts nothing
// itself: clusters have their own launchers (ssh, srun, Kubernetes).
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "core/spec/job_spec.h"

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
  int world = 0;
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
  o << "# Pipewright run across " << L.hosts.size() << " hosts, " << L.world << " stages (one worker per stage).\n"
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
    << "# One task per pipeline stage; the coordinator runs on the first node.\n"
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
}  // namespace

int cmd_launch(const std::vector<std::string>& argv) {
  CliArgs args(argv, {}, {"hosts", "nproc-per-host", "port", "ifname", "sbatch", "output"});
  args.expect_positional(1, "one job file");
  Layout L;
  L.job = args.positional()[0];
  JobSpec job = load_job(L.job, args.overrides());
  if (!args.overrides().empty())
    throw UsageError("--set is not carried to remote hosts; write the overrides into the job file");
  L.hosts = split_hosts(args.option("hosts").value_or(""));
  if (L.hosts.empty()) throw UsageError("--hosts h1,h2,... is required");
  L.world = job.pipeline.stages;
  int hosts = static_cast<int>(L.hosts.size());
  L.per_host = (L.world + hosts - 1) / hosts;
  if (auto n = args.option("nproc-per-host")) {
    L.per_host = std::stoi(*n);
    if (L.per_host < 1) throw UsageError("--nproc-per-host must be >= 1");
  }
  if (L.per_host * hosts < L.world)
    throw UsageError(std::to_string(hosts) + " hosts x " + std::to_string(L.per_host) + " workers cannot hold " +
                     std::to_string(L.world) + " stages (pipeline.stages)");
  if (auto p = args.option("port")) L.port = std::stoi(*p);
  L.ifname = args.option("ifname").value_or("");
  std::string text = args.option("sbatch") ? sbatch_script(L) : shell_script(L);
  auto out_path = args.option("sbatch") ? args.option("sbatch") : args.option("output");
  if (out_path) {
    std::ofstream out(*out_path);
    if (!out) throw std::runtime_error("cannot write \"" + *out_path + "\"");
    out << text;
    std::cout << "wrote " << *out_path << "\n";
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace pw::cli

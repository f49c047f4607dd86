#include "cli/nas/supernet_launch.h"

#include <ctime>
#include <stdexcept>

#include "runtime/child_process.h"

namespace pw::cli {

std::string nas_worker_binary() {
  std::string found = rt::find_sibling_program(
      "PW_NAS_WORKER", {"pw_nas_worker", "../runtime/nas/pw_nas_worker", "../libexec/pipewright/pw_nas_worker"});
  if (found.empty())
    throw std::runtime_error("cannot find the supernet worker program pw_nas_worker next to this executable"
                             " (set PW_NAS_WORKER)");
  return found;
}

namespace {
std::string default_supernet_run_dir(const std::string& name) {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return "runs/" + name + "-" + buf;
}
}  // namespace

rt::nas::CspLaunch supernet_launch(const std::string& job_file, const JobSpec& job, const RunArgs& args) {
  rt::nas::CspLaunch l;
  l.worker_binary = !args.worker.empty() ? args.worker : nas_worker_binary();
  l.job_file = job_file;
  l.overrides = args.overrides;
  l.workers = job.pipeline.stages;
  l.out_dir = !args.run_dir.empty() ? args.run_dir : !args.resume.empty() ? args.resume : default_supernet_run_dir(job.name);
  l.checkpoint_every = args.checkpoint_every;
  l.resume_dir = args.resume;
  return l;
}

}  // namespace pw::cli

#include <iostream>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "core/model/profile_io.h"
#include "runtime/profiler.h"

namespace pw::cli {

int cmd_profile(const std::vector<std::string>& argv) {
  std::vector<std::string> a = argv;
  for (auto& x : a)
    if (x == "-o") x = "--output";
  CliArgs args(a, {}, {"output", "repeats", "threads"});
  args.expect_positional(1, "one job file");
  JobSpec job = load_job(args.positional()[0], args.overrides());
  auto out = args.option("output");
  if (!out) throw UsageError("-o FILE is required");
  rt::ProfileOptions po;
  auto num = [&](const char* name, int fallback) {
    auto v = args.option(name);
    if (!v) return fallback;
    try {
      int x = std::stoi(*v);
      if (x > 0) return x;
    } catch (...) {
    }
    throw UsageError(std::string("--") + name + " needs a positive integer, got \"" + *v + "\"");
  };
  po.repeats = num("repeats", po.repeats);
  po.threads = num("threads", 0);
  ModelProfile p = rt::measure_profile(job, po);
  save_profile_file(p, *out);
  std::cout << "profile of " << job.name << " (" << p.size() << " layers, microbatch " << p.microbatch_size
            << ") written to " << *out << "\n  layer          fwd ms    bwd ms   activations      params\n";
  for (const auto& l : p.layers)
    std::cout << "  " << l.name << std::string(l.name.size() < 12 ? 12 - l.name.size() : 1, ' ')
              << pad(fixed(l.fwd_ms, 3), 9) << pad(fixed(l.bwd_ms, 3), 10) << pad(gib(l.activation_bytes), 14)
              << pad(gib(l.param_bytes), 12) << "\n";
  return 0;
}

}  // namespace pw::cli

// `pipewright search` and `pipewright export-subnet` (issue 23): the search
// over a trained supernet, stored in the run's database with the accuracy /
// predicted-latency front, and one chosen subnet written as TorchScript.
// Both run in the worker program (pw_nas_worker search|export), where the
// trained candidates are rebuilt with the libtorch code that trained them;
// the predicted latency and the front are core's (subnet_cost, pareto).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/nas/nas_run.h"
#include "core/io/run_dir_lock.h"
#include "core/nas/nas_job.h"
#include "core/nas/pareto.h"
#include "core/io/checked_write.h"
#include "core/nas/subnet_cost.h"
#include "core/spec/refusal.h"
#include "runtime/child_process.h"
#if PW_HAVE_DB
#include "db/run_reader.h"
#include "db/search_tables.h"
#endif

namespace pw::cli {
namespace fs = std::filesystem;
namespace {

int run_worker(const std::vector<std::string>& cmd) {
  rt::ChildExit x = rt::wait_child(rt::spawn_child(cmd));
  if (x.code == 127) throw std::runtime_error("cannot run " + cmd[0]);
  return x.signal || x.lost ? 1 : x.code;
}

// A scratch file for the worker's JSON answer, removed on scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const char* what)
      : path((fs::temp_directory_path() / ("pw-" + std::string(what) + "-" + std::to_string(getpid()) + ".json")).string()) {}
  ~TempFile() { std::error_code ec; fs::remove(path, ec); }
  nlohmann::json read() const {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("the worker wrote no answer to " + path);
    return nlohmann::json::parse(in);
  }
};

// The options of `search` and `export-subnet` (each uses its own).
struct NasSearchArgs {
  std::string target, worker, run_dir, subnet = "best", out, search;
  std::vector<std::string> overrides;
  bool overwrite = false;
};

std::string worker_of(const NasSearchArgs& args) { return args.worker.empty() ? nas_worker_binary() : args.worker; }

// Legacy form: a run directory, searched and printed, nothing stored.
int search_run_dir(const std::string& dir, const NasSearchArgs& args) {
  std::string job_file = dir + "/job.json";
  if (!fs::exists(job_file))
    throw UsageError("\"" + dir + "\" has no job.json: not the run directory of a supernet run");
  auto lock = RunDirLock::acquire(dir);  // not while a run writes its weights (core/io/run_dir_lock.h)
  std::vector<std::string> cmd = {worker_of(args), "search", job_file, "--out", dir};
  for (const auto& o : args.overrides) cmd.insert(cmd.end(), {"--set", o});
  return run_worker(cmd);
}

#if PW_HAVE_DB
// A recorded supernet run: its database, weights folder and job file.
struct SupernetRun {
  std::string db, run_dir, job_file;
};

SupernetRun open_supernet_run(const std::string& db, const NasSearchArgs& args, const char* command) {
  db::RunReader rd(db);
  const auto& run = rd.run();
  nlohmann::json job = rd.job();
  std::string name = "run \"" + run.name + "\" in " + db;
  if (job.is_null()) throw RefusedError(db + ": no job recorded: not a run " + std::string(command) + " can use");
  if (!job.contains("search_space") || job["search_space"].is_null())
    throw RefusedError(name + " is not a supernet run (its job has no search_space): pipewright " + command +
                       " needs a run of a supernet job (pipewright run SUPERNET_JOB --db FILE)");
  if (run.source != "run")
    throw RefusedError(name + " was simulated, not trained: there are no trained weights to " +
                       (std::string(command) == "search" ? "search" : "export") +
                       " (pipewright run SUPERNET_JOB --db FILE trains them)");
  if (run.status != RunStatus::Finished)
    throw RefusedError(name + " is " + to_string(run.status) + ", not finished: its trained weights are incomplete");
  SupernetRun r{db, args.run_dir, ""};
  if (r.run_dir.empty()) {
    nlohmann::json summary = rd.summary();
    if (!summary.is_object() || !summary.contains("run_dir") || !summary["run_dir"].is_string())
      throw RefusedError(name + " records no run directory: pass --run-dir DIR (the run's --run-dir)");
    r.run_dir = summary["run_dir"].get<std::string>();
    // Runs recorded before the path was stored absolute: relative to the
    // database's folder when not found from here.
    if (!fs::is_directory(r.run_dir) && fs::path(r.run_dir).is_relative()) {
      fs::path beside = fs::path(db).parent_path() / r.run_dir;
      if (fs::is_directory(beside)) r.run_dir = beside.string();
    }
  }
  r.job_file = r.run_dir + "/job.json";
  if (!fs::is_directory(r.run_dir) || !fs::exists(r.job_file))
    throw RefusedError(name + ": its run directory \"" + r.run_dir +
                       "\" (trained weights, job.json) is gone; pass --run-dir DIR if it moved");
  return r;
}

db::SearchRecord search_record(const nlohmann::json& scored, const std::string& method, const nas::NasJob& nj,
                               int validation_samples) {
  db::SearchRecord s;
  s.method = method;
  s.validation_samples = validation_samples;
  s.device = nj.job.cluster.device.preset;
  s.microbatch = nj.job.training.microbatch_size;
  std::vector<nas::TradeoffPoint> pts;
  for (const auto& x : scored) {
    db::SearchSubnet sub;
    sub.choices = x.at("choices").get<std::vector<int>>();
    sub.accuracy = x.at("accuracy").get<double>();
    sub.parameters = x.at("parameters").get<std::int64_t>();
    sub.latency_ms = nas::subnet_latency_ms(nj.space, sub.choices);
    pts.push_back({sub.accuracy, sub.latency_ms});
    s.subnets.push_back(std::move(sub));
  }
  auto front = nas::pareto_front(pts);
  for (size_t i = 0; i < s.subnets.size(); ++i) s.subnets[i].pareto = front[i];
  return s;
}

void print_front(const db::SearchRecord& s, std::int64_t first_id) {
  std::vector<nas::TradeoffPoint> pts;
  std::vector<bool> on;
  for (const auto& x : s.subnets) {
    pts.push_back({x.accuracy, x.latency_ms});
    on.push_back(x.pareto);
  }
  std::cout << "  accuracy / predicted latency front of the " << s.method << " search ("
            << std::count(on.begin(), on.end(), true) << " of " << s.subnets.size() << " subnets):\n"
            << "      id  accuracy  latency ms  parameters  subnet\n";
  for (int i : nas::pareto_order(pts, on)) {
    const auto& x = s.subnets[i];
    std::cout << "  " << pad(std::to_string(first_id + i), 6) << "  " << pad(fixed(x.accuracy, 4), 8) << "  "
              << pad(fixed(x.latency_ms, 4), 10) << "  " << pad(std::to_string(x.parameters), 10) << "  "
              << nas::to_string(x.choices) << "\n";
  }
}

int search_database(const std::string& db, const NasSearchArgs& args) {
  SupernetRun run = open_supernet_run(db, args, "search");
  auto lock = RunDirLock::acquire(run.run_dir);  // not while a run writes its weights
  // The search is stored into this file: a damaged one is refused now,
  // before the search runs, not after (store_search checks it again).
  db::check_before_adding(db);
  TempFile results("search");
  std::vector<std::string> cmd = {worker_of(args), "search", run.job_file, "--out", run.run_dir, "--results", results.path};
  for (const auto& o : args.overrides) cmd.insert(cmd.end(), {"--set", o});
  if (int rc = run_worker(cmd); rc != 0) return rc;
  nlohmann::json r = results.read();
  // The space (and so the latency) of the job the weights were trained
  // for, with the search settings given here.
  nas::NasJob nj = nas::prepare_nas_job(load_job(run.job_file, args.overrides));
  int samples = r.at("validation_samples").get<int>();
  for (const char* method : {"evolution", "random"}) {
    db::SearchRecord s = search_record(r.at(method), method, nj, samples);
    std::int64_t id = db::store_search(db, s);
    db::RunReader rd(db);
    std::int64_t first = 0;
    for (const auto& got : rd.searches())
      if (got.id == id && !got.subnets.empty()) first = got.subnets.front().id;
    std::cout << "stored search " << id << " (" << method << ", " << s.subnets.size() << " subnets, ids " << first
              << ".." << first + static_cast<std::int64_t>(s.subnets.size()) - 1 << ") in " << db << "\n";
    if (std::string(method) == "evolution") print_front(s, first);
  }
  std::cout << "  export one: pipewright export-subnet " << db << " --subnet best|ID -o model.pt\n";
  return 0;
}

// --subnet: "best" (the most accurate of the search, then the fastest),
// a stored subnet id, or a choice list "[c0,c1,...]" / "c0,c1,..." / "c0 c1 ...".
struct Chosen {
  std::vector<int> choices;
  double accuracy = -1;  // stored figure; < 0 when the subnet was never scored
  std::int64_t id = -1;
};

Chosen choose_subnet(const std::string& db, const std::string& which, const std::optional<std::string>& search_opt) {
  db::RunReader rd(db);
  auto searches = rd.searches();
  auto known = [&](const std::vector<int>& c) -> const db::SearchSubnet* {
    for (auto it = searches.rbegin(); it != searches.rend(); ++it)
      for (const auto& x : it->subnets)
        if (x.choices == c) return &x;
    return nullptr;
  };
  if (which == "best") {
    const db::SearchRecord* s = nullptr;
    if (search_opt) {
      for (const auto& x : searches)
        if (std::to_string(x.id) == *search_opt) s = &x;
      if (!s) throw UsageError("--search " + *search_opt + ": no such search in " + db);
    } else {
      for (const auto& x : searches)
        if (x.method == "evolution") s = &x;  // the latest
    }
    if (!s || s->subnets.empty())
      throw RefusedError(db + ": no search stored yet: run pipewright search " + db + " first");
    const db::SearchSubnet* best = &s->subnets.front();
    for (const auto& x : s->subnets)
      if (x.accuracy > best->accuracy || (x.accuracy == best->accuracy && x.latency_ms < best->latency_ms)) best = &x;
    return {best->choices, best->accuracy, best->id};
  }
  if (!which.empty() && std::all_of(which.begin(), which.end(), ::isdigit)) {
    for (const auto& s : searches)
      for (const auto& x : s.subnets)
        if (std::to_string(x.id) == which) return {x.choices, x.accuracy, x.id};
    throw UsageError("--subnet " + which + ": no stored subnet has that id in " + db +
                     " (pipewright search lists them)");
  }
  std::string text = which;
  if (!text.empty() && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  // Commas or spaces, as the search prints subnets ("1 4 2 5").
  std::replace(text.begin(), text.end(), ' ', ',');
  std::vector<int> c;
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty()) continue;
    try {
      size_t used = 0;
      c.push_back(std::stoi(tok, &used));
      if (tok.find_first_not_of(" ", used) != std::string::npos) throw std::invalid_argument(tok);
    } catch (const std::exception&) {
      throw UsageError("--subnet \"" + which + "\": expected best, a subnet id or a choice list [c0,c1,...]");
    }
  }
  if (c.empty()) throw UsageError("--subnet \"" + which + "\": expected best, a subnet id or a choice list [c0,c1,...]");
  Chosen out{c, -1, -1};
  if (const auto* x = known(c)) out = {c, x->accuracy, x->id};
  return out;
}
#endif

int search(const NasSearchArgs& args) {
  const std::string& target = args.target;
  if (fs::is_directory(target)) {
    if (!args.run_dir.empty()) throw UsageError("--run-dir goes with a run database, not a run directory");
    return search_run_dir(target, args);
  }
#if PW_HAVE_DB
  return search_database(target, args);
#else
  throw UsageError("this pipewright has no run database support: pass the run directory");
#endif
}

int export_subnet(const NasSearchArgs& args) {
#if PW_HAVE_DB
  const std::string& db = args.target;
  const std::string& out = args.out;
  if (out == db) throw UsageError("--out names the run database itself");
  check_output({out, "--out", args.overwrite});  // before the run is opened and the worker started
  SupernetRun run = open_supernet_run(db, args, "export-subnet");
  auto lock = RunDirLock::acquire(run.run_dir);  // not while a run writes its weights
  Chosen c = choose_subnet(db, args.subnet, args.search.empty() ? std::nullopt : std::optional<std::string>(args.search));
  nas::NasJob nj = nas::prepare_nas_job(load_job(run.job_file));
  std::string list;
  for (size_t i = 0; i < c.choices.size(); ++i) list += (i ? "," : "") + std::to_string(c.choices[i]);
  try {
    nas::subnet_latency_ms(nj.space, c.choices);  // the space's bounds, named here before the worker starts
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--subnet: ") + e.what());
  }
  TempFile answer("export");
  // The worker writes beside the target; the file is moved into place under
  // the output rule only once the worker succeeded.
  // Nor is a file the worker reads: the run's job and trained weights.
  std::vector<InputFile> inputs{{run.job_file, "the supernet run's job file"}};
  for (int r = 0; r < static_cast<int>(nj.stages.size()); ++r)
    inputs.push_back({run.run_dir + "/stage" + std::to_string(r) + ".bin", "a stage's trained weights"});
  OutputByOther model({out, "--out", args.overwrite, inputs});
  int rc = run_worker({worker_of(args), "export", run.job_file, "--out", run.run_dir, "--subnet", list, "--model",
                       model.temp_path(), "--results", answer.path});
  if (rc != 0) return rc;
  model.place();
  nlohmann::json r = answer.read();
  double file_acc = r.at("file_accuracy").get<double>();
  std::cout << "wrote " << out << ": subnet " << nas::to_string(c.choices)
            << (c.id >= 0 ? " (id " + std::to_string(c.id) + ")" : std::string()) << ", "
            << r.at("parameters").get<std::int64_t>() << " parameters, predicted latency "
            << fixed(nas::subnet_latency_ms(nj.space, c.choices), 4) << " ms per " << nj.job.training.microbatch_size
            << " images on " << nj.job.cluster.device.preset << "\n"
            << "  accuracy of the written model on " << r.at("validation_samples").get<std::int64_t>()
            << " held-out images: " << fixed(file_acc, 4);
  if (c.accuracy >= 0) std::cout << " (search: " << fixed(c.accuracy, 4) << ")";
  std::cout << "\n";
  // The file must classify as the search scored the subnet.
  if (c.accuracy >= 0 && std::abs(file_acc - c.accuracy) > 1e-9) {
    std::cerr << "error: the written model's accuracy " << file_acc << " differs from the stored " << c.accuracy << "\n";
    return 1;
  }
  return 0;
#else
  throw UsageError("this pipewright has no run database support");
#endif
}

}  // namespace

Action define_search(Args& args) {
  auto a = std::make_shared<NasSearchArgs>();
  args.positional("RUN", a->target, "the run database (or run directory) of a supernet run");
  args.text("--run-dir", a->run_dir, "DIR", "the run's directory, if it moved since the run (with a run database)");
  args.text("--worker", a->worker, "BIN", "the supernet worker program (default: pw_nas_worker next to this one)");
  args.overrides(a->overrides);
  return [a] { return search(*a); };
}

Action define_export_subnet(Args& args) {
  auto a = std::make_shared<NasSearchArgs>();
  args.positional("RUN.sqlite", a->target, "the run database of a searched supernet run");
  args.text("--subnet", a->subnet, "best|ID|[c0,...]",
            "the most accurate subnet of the latest search (default), a stored subnet id, or a choice list");
  args.output("-o,--out", a->out, "MODEL.pt", "the TorchScript file to write");
  args.required("--out");
  args.overwrite(a->overwrite);
  args.text("--search", a->search, "N", "with --subnet best: the stored search to take it from (default: the latest)");
  args.text("--run-dir", a->run_dir, "DIR", "the run's directory, if it moved since the run");
  args.text("--worker", a->worker, "BIN", "the supernet worker program (default: pw_nas_worker next to this one)");
  return [a] { return export_subnet(*a); };
}

}  // namespace pw::cli

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/db/explain_report.h"
#include "core/analysis/idle_attribution.h"
#include "core/analysis/steps_per_iteration.h"
#include "core/io/checked_write.h"
#include "core/trace/chrome_trace.h"
#include "cli/db/recording.h"
#include "db/run_reader.h"

namespace pw::cli {
namespace {

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string opt(std::int64_t v) { return v < 0 ? "" : std::to_string(v); }

// Streams the run into a Chrome/Perfetto trace; migrations and subnet
// dependency edges become flow arrows between stage tracks; each stage's
// idle time, attributed to causes, is a track of its own.
std::uint64_t export_chrome(const db::RunReader& r, const OutputTarget& target) {
  OutputStream file(target);
  std::ostream& out = file.stream();
  int stages = r.run().stages;
  for (const auto& s : r.stage_stats()) stages = std::max(stages, s.stage + 1);
  ChromeTraceWriter w(out, stages, "pipewright " + r.run().source + " " + r.run().name + " (" + r.run().run_id + ")");
  std::uint64_t n = 0;
  r.for_each_event([&](const Event& e) {
    w.on_event(e);
    ++n;
  });
  r.for_each_memory([&](const MemorySample& m) { w.on_memory(m.stage, m.t_ns, m.bytes); });
  int id = 1;
  for (const auto& m : r.migrations())
    w.flow(id++, m.from_stage, m.start_ns, m.to_stage, m.end_ns, "migrate layer " + std::to_string(m.layer));
  for (const auto& e : r.subnet_edges())
    w.flow(id++, e.stage, e.t_ns, e.stage, e.resolved_ns >= 0 ? e.resolved_ns : e.t_ns,
           "subnet " + std::to_string(e.waiter) + " waits for " + std::to_string(e.waited_for) + " (layer " +
               std::to_string(e.layer) + ")");
  // The attribution needs every event at once (a second pass over the
  // file), one pipeline at a time: the replicas share stage numbers.
  std::vector<std::vector<Event>> events(static_cast<std::size_t>(r.replicas()));
  r.for_each_event([&](const Event& e) {
    const auto k = static_cast<std::size_t>(std::max<int>(e.replica, 0));  // a live file may have grown a replica
    if (k >= events.size()) events.resize(k + 1);
    events[k].push_back(e);
  });
  AttributionOptions ao;
  ao.optimizer_steps_per_iteration = optimizer_steps_per_iteration(r.job());
  for (int k = 0; k < static_cast<int>(events.size()); ++k) {
    if (events[static_cast<std::size_t>(k)].empty()) continue;
    Attribution a = attribute_idle(std::move(events[static_cast<std::size_t>(k)]), ao);
    w.declare_idle_tracks(k);
    for (const auto& i : a.intervals) w.on_idle(i, k);
  }
  w.finish();
  file.commit();
  return n;
}

constexpr const char* kCsvTables[] = {"events", "memory", "throughput", "migrations",
                                      "subnet_states", "subnet_edges", "logs", "plans"};

// Every table's file is checked before the first is written: a refused one
// leaves DIR as it was, not half replaced.
void export_csv(const db::RunReader& r, const std::string& dir, bool overwrite) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw OutputRefused("--csv " + dir + ": cannot create the directory: " + ec.message());
  auto target = [&](const std::string& table) { return OutputTarget{dir + "/" + table + ".csv", "--csv", overwrite}; };
  for (const char* t : kCsvTables) check_output(target(t));
  // One table: its file, streamed, committed when the block ends well.
  auto table = [&](const char* name, const std::function<void(std::ostream&)>& write) {
    OutputStream file(target(name));
    write(file.stream());
    file.commit();
  };
  table("events", [&](std::ostream& out) {
    out << "stage,kind,start_ns,end_ns,microbatch,chunk,first_layer,last_layer,bytes,replica\n";
    r.for_each_event([&](const Event& e) {
      out << e.stage << ',' << to_string(e.kind) << ',' << e.start_ns << ',' << e.end_ns << ',' << e.microbatch << ','
          << e.chunk << ',' << e.first_layer << ',' << e.last_layer << ',' << e.bytes << ',' << e.replica << '\n';
    });
  });
  table("memory", [&](std::ostream& out) {
    out << "t_ns,stage,bytes,parameters,optimizer,stashed,activations,swapped_out,prefetched,budget\n";
    r.for_each_memory([&](const MemorySample& m) {
      out << m.t_ns << ',' << m.stage << ',' << m.bytes << ',' << opt(m.parameters) << ',' << opt(m.optimizer) << ','
          << opt(m.stashed) << ',' << opt(m.activations) << ',' << opt(m.swapped_out) << ',' << opt(m.prefetched) << ','
          << opt(m.budget) << '\n';
    });
  });
  table("throughput", [&](std::ostream& out) {
    out << "t_ns,iteration,samples_per_s,iteration_ms\n";
    for (const auto& t : r.throughput()) out << t.t_ns << ',' << opt(t.iteration) << ',' << t.samples_per_s << ',' << t.iteration_ms << '\n';
  });
  table("migrations", [&](std::ostream& out) {
    out << "start_ns,end_ns,layer,from_stage,to_stage,bytes,plan_version\n";
    for (const auto& m : r.migrations())
      out << m.start_ns << ',' << m.end_ns << ',' << m.layer << ',' << m.from_stage << ',' << m.to_stage << ',' << m.bytes
          << ',' << opt(m.plan_version) << '\n';
  });
  table("subnet_states", [&](std::ostream& out) {
    out << "t_ns,subnet,stage,phase\n";
    for (const auto& s : r.subnet_states()) out << s.t_ns << ',' << s.subnet << ',' << s.stage << ',' << to_string(s.phase) << '\n';
  });
  table("subnet_edges", [&](std::ostream& out) {
    out << "t_ns,resolved_ns,waiter,waited_for,stage,layer\n";
    for (const auto& e : r.subnet_edges())
      out << e.t_ns << ',' << opt(e.resolved_ns) << ',' << e.waiter << ',' << e.waited_for << ',' << e.stage << ',' << e.layer << '\n';
  });
  table("logs", [&](std::ostream& out) {
    out << "t_ns,level,source,message\n";
    for (const auto& l : r.logs()) out << l.t_ns << ',' << to_string(l.level) << ',' << csv_quote(l.source) << ',' << csv_quote(l.message) << '\n';
  });
  table("plans", [&](std::ostream& out) {
    out << "version,t_ns,reason,plan_json\n";
    for (const auto& p : r.plans()) out << p.version << ',' << p.t_ns << ',' << csv_quote(p.reason) << ',' << csv_quote(p.plan.dump()) << '\n';
  });
}

}  // namespace

Action define_export(Args& args) {
  struct A {
    std::string db, trace, csv;
    bool overwrite = false;
  };
  auto a = std::make_shared<A>();
  args.positional("RUN.sqlite", a->db, "the run database");
  args.output("--chrome-trace", a->trace, "OUT.json", "write a Chrome/Perfetto trace (streamed)");
  args.output("--csv", a->csv, "DIR", "write the run's tables as CSV files into DIR");
  args.overwrite(a->overwrite);
  return [a] {
    if (a->trace.empty() && a->csv.empty())
      throw UsageError("nothing to do: give --chrome-trace OUT.json and/or --csv DIR");
    if (!a->trace.empty() && a->trace == a->db) throw UsageError("--chrome-trace names the run database itself");
    const OutputTarget trace{a->trace, "--chrome-trace", a->overwrite};
    if (!a->trace.empty()) check_output(trace);  // before the database is read
    db::RunReader r(a->db);
    return interpret_recording(a->db, [&] {
      if (!a->trace.empty()) {
        auto n = export_chrome(r, trace);
        std::cout << "Chrome trace: " << a->trace << " (" << n << " events; open in ui.perfetto.dev or chrome://tracing)\n";
      }
      if (!a->csv.empty()) {
        export_csv(r, a->csv, a->overwrite);
        std::cout << "CSV tables: " << a->csv << "/{events,memory,throughput,migrations,subnet_states,subnet_edges,logs,plans}.csv\n";
      }
      return 0;
    });
  };
}

}  // namespace pw::cli

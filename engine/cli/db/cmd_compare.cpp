#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/db/run_figures.h"
#include "cli/format.h"
#include "cli/db/recording.h"
#include "db/run_reader.h"

namespace pw::cli {
namespace {

nlohmann::json ratio(const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_number() || !b.is_number() || a.get<double>() == 0) return nullptr;
  return b.get<double>() / a.get<double>();
}

struct CompareArgs {
  std::string a, b;
  bool json = false;
};

int run_compare(const CompareArgs& args) {
  db::RunReader ra(args.a), rb(args.b);
  // Each file's figures are read by itself, so damage names its own file;
  // the rows below hold only figures computed here.
  auto a = interpret_recording(args.a, [&] { return run_figures(ra); });
  auto b = interpret_recording(args.b, [&] { return run_figures(rb); });
  // Runs of different (stages, replicas) splits compare on samples/s over
  // every replica, and per device of the split.
  auto per_device = [](const nlohmann::json& f) -> nlohmann::json {
    const int devices =
        f["parallel"]["tensor"].get<int>() * f["parallel"]["stages"].get<int>() * f["parallel"]["replicas"].get<int>();
    if (!f["samples_per_s"].is_number() || devices <= 0) return nullptr;
    return f["samples_per_s"].get<double>() / devices;
  };
  // (label, a, b) rows; ratios are B/A.
  std::vector<std::tuple<std::string, nlohmann::json, nlohmann::json>> rows = {
      {"tensor", a["parallel"]["tensor"], b["parallel"]["tensor"]},
      {"stages", a["parallel"]["stages"], b["parallel"]["stages"]},
      {"replicas", a["parallel"]["replicas"], b["parallel"]["replicas"]},
      {"samples/s (all replicas)", a["samples_per_s"], b["samples_per_s"]},
      {"samples/s per device", per_device(a), per_device(b)},
      {"throughput samples/s", a["throughput_samples_per_s"], b["throughput_samples_per_s"]},
      {"iteration ms", a["iteration_time_ms"], b["iteration_time_ms"]},
      {"bubble", a["bubble_fraction"], b["bubble_fraction"]},
      {"span ms", a["span_ns"].get<double>() / 1e6, b["span_ns"].get<double>() / 1e6},
      {"events", a["events"], b["events"]},
      {"migrations", a["migrations"]["count"], b["migrations"]["count"]},
  };
  size_t n = std::max(a["stages"].size(), b["stages"].size());
  auto stage_val = [](const nlohmann::json& f, size_t s, const char* k, double scale) -> nlohmann::json {
    if (s >= f["stages"].size()) return nullptr;
    return f["stages"][s][k].get<double>() * scale;
  };
  for (size_t s = 0; s < n; ++s) {
    rows.emplace_back("stage " + std::to_string(s) + " busy ms", stage_val(a, s, "busy_ns", 1e-6), stage_val(b, s, "busy_ns", 1e-6));
    // The all-reduces where either run had them: communication, apart from busy.
    for (const auto& [key, label] : {std::pair{"gradient_allreduce_ns", " gradient all-reduce ms"},
                                     std::pair{"tensor_allreduce_ns", " tensor all-reduce ms"}}) {
      const auto x = stage_val(a, s, key, 1e-6), y = stage_val(b, s, key, 1e-6);
      if ((x.is_number() && x.get<double>() > 0) || (y.is_number() && y.get<double>() > 0))
        rows.emplace_back("stage " + std::to_string(s) + label, x, y);
    }
    rows.emplace_back("stage " + std::to_string(s) + " peak GiB", stage_val(a, s, "peak_memory_bytes", 1.0 / 1073741824),
                      stage_val(b, s, "peak_memory_bytes", 1.0 / 1073741824));
  }
  if (args.json) {
    nlohmann::json out{{"a", a}, {"b", b}};
    nlohmann::json rj = nlohmann::json::array();
    for (auto& [k, x, y] : rows) rj.push_back({{"figure", k}, {"a", x}, {"b", y}, {"ratio", ratio(x, y)}});
    out["rows"] = rj;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  auto show = [](const nlohmann::json& v) {
    if (v.is_null()) return std::string("-");
    double d = v.get<double>();
    return d == static_cast<std::int64_t>(d) && std::abs(d) < 1e15 ? std::to_string(static_cast<std::int64_t>(d)) : fixed(d, 3);
  };
  auto head = [](const char* label, const nlohmann::json& f) {
    const int st = f["parallel"]["stages"].get<int>(), rep = f["parallel"]["replicas"].get<int>();
    const int t = f["parallel"]["tensor"].get<int>();
    std::cout << label << ": " << f["file"].get<std::string>() << " (" << f["name"].get<std::string>() << ", "
              << f["status"].get<std::string>() << "): " << st << " stage" << (st == 1 ? "" : "s") << " x " << rep
              << " replica" << (rep == 1 ? "" : "s") << (t > 1 ? " x " + std::to_string(t) + " tensor ranks" : "")
              << "\n";
  };
  head("A", a);
  head("B", b);
  std::cout << "\n";
  std::cout << "  figure                          A               B       B/A\n";
  for (auto& [k, x, y] : rows) {
    auto r = ratio(x, y);
    std::cout << "  " << k << std::string(k.size() < 24 ? 24 - k.size() : 1, ' ') << pad(show(x), 14) << pad(show(y), 16)
              << pad(r.is_null() ? "-" : fixed(r.get<double>(), 3), 10) << "\n";
  }
  return 0;
}

}  // namespace

Action define_compare(Args& args) {
  auto a = std::make_shared<CompareArgs>();
  args.positional("A.sqlite", a->a, "the first run database");
  args.positional("B.sqlite", a->b, "the second run database (ratios are B/A)");
  args.json(a->json);
  return [a] { return run_compare(*a); };
}

}  // namespace pw::cli

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/commands.h"
#include "cli/format.h"
#include "ipc/control.h"
#include "ipc/subscriber.h"

namespace pw::cli {
namespace {

namespace pb = ipc::pb;
using std::chrono::milliseconds;

// Keys for a run listening beyond loopback: --server-key (its .pub) and
// --client-key (our .key), both or neither.
struct Keys {
  std::string server, client;
};
void declare_keys(Args& args, Keys& k) {
  args.text("--server-key", k.server, "SERVER.pub", "the run's public key (`pipewright keys`), beyond loopback");
  args.text("--client-key", k.client, "CLIENT.key", "our key pair, listed in the run's authorized_clients");
  args.needs("--server-key", "--client-key");
  args.needs("--client-key", "--server-key");
}

// What the watcher knows about the run: the snapshot plus what followed.
struct View {
  pb::RunStatus status;
  std::map<int, pb::StageState> stages;
  double throughput = 0;
  std::uint64_t events = 0, snapshot_events = 0, migrations = 0;
  bool terminal() const {
    auto s = status.state();
    return s == pb::FINISHED || s == pb::FAILED || s == pb::STOPPED || s == pb::INTERRUPTED;
  }
  void apply(const pb::Snapshot& s) {
    status = s.status();
    for (const auto& st : s.stages()) stages[st.stage()] = st;
    throughput = s.throughput().samples_per_s();
    snapshot_events = s.events();
    events = s.events();
    migrations = s.migrations();
  }
  void apply(const pb::Envelope& e) {
    switch (e.body_case()) {
      case pb::Envelope::kStatus: status = e.status(); break;
      case pb::Envelope::kEvents:
        for (const auto& ev : e.events().events()) {
          ipc::fold_event(stages[ev.stage()], ev);
          ++events;
        }
        break;
      case pb::Envelope::kMemory:
        for (const auto& m : e.memory().samples()) ipc::fold_memory(stages[m.stage()], m);
        break;
      case pb::Envelope::kThroughput: throughput = e.throughput().samples_per_s(); break;
      case pb::Envelope::kMigrations: migrations += e.migrations().migrations_size(); break;
      default: break;
    }
  }
};

void print_line(const View& v, const ipc::SubscriberStats& s) {
  std::int64_t t = 0;
  std::uint64_t peak = 0;
  for (const auto& [k, st] : v.stages) {
    t = std::max<std::int64_t>(t, st.last_end_ns());
    peak = std::max<std::uint64_t>(peak, st.peak_memory_bytes());
  }
  std::cout << "[" << ipc::to_string(v.status.state()) << "] t=" << fixed(t / 1e6, 1) << " ms  events " << v.events
            << "  throughput " << fixed(v.throughput, 1) << " samples/s  peak " << gib(peak) << "  gaps " << s.gaps
            << std::endl;
}

nlohmann::json result(const View& v, const ipc::Subscriber& sub, bool snapshot) {
  const auto& s = sub.stats();
  nlohmann::json st = nlohmann::json::array();
  for (const auto& [k, x] : v.stages)
    st.push_back({{"stage", k}, {"events", x.events()}, {"busy_ns", x.busy_ns()}, {"peak_memory_bytes", x.peak_memory_bytes()}});
  return {{"run_id", sub.run_id()},
          {"status", ipc::to_string(v.status.state())},
          {"reason", v.status.reason()},
          {"job", v.status.job_name()},
          {"snapshot", snapshot},
          {"events", v.events},
          {"snapshot_events", v.snapshot_events},
          {"received_events", v.events - v.snapshot_events},
          {"throughput_samples_per_s", v.throughput},
          {"migrations", v.migrations},
          {"gaps", s.gaps},
          {"missed_messages", s.missed},
          {"malformed", s.malformed},
          {"unknown", s.unknown},
          {"stages", st}};
}

std::optional<ipc::CurveClient> curve_client(const Keys& k) {
  if (k.server.empty()) return std::nullopt;
  return ipc::curve_client_from_files(k.server, k.client);
}

// A control endpoint advertised as bound to every interface
// (tcp://0.0.0.0:P) is reached at the host we reached telemetry on.
std::string reachable(const std::string& control, const std::string& telemetry) {
  auto host_of = [](const std::string& ep) { return ep.substr(0, ep.rfind(':')); };
  std::string h = host_of(control);
  if (h != "tcp://0.0.0.0" && h != "tcp://*") return control;
  return host_of(telemetry) + control.substr(control.rfind(':'));
}

struct WatchArgs {
  std::string endpoint;
  Keys keys;
  double timeout = 10, interval = 1;
  bool json = false;
};

int watch(const WatchArgs& args) {
  const std::string& endpoint = args.endpoint;
  const double timeout = args.timeout, interval = args.interval;
  const bool json = args.json;

  auto curve = curve_client(args.keys);
  ipc::SubscriberOptions so;
  so.curve = curve;
  ipc::Subscriber sub(endpoint, so);
  auto first = sub.wait_connected(milliseconds(static_cast<long>(timeout * 1000)));
  if (!first) {
    std::cerr << "error: no telemetry from " << endpoint << " within " << timeout << " s\n";
    return 3;
  }
  View view;
  bool have_snapshot = false;
  std::uint32_t period_ms = 200;
  if (first->envelope.has_heartbeat() && first->envelope.heartbeat().period_ms() > 0)
    period_ms = first->envelope.heartbeat().period_ms();
  if (!sub.control_endpoint().empty()) {
    ipc::ControlClient ctl(reachable(sub.control_endpoint(), endpoint), "pipewright-watch", curve ? &*curve : nullptr);
    if (auto r = ctl.snapshot(milliseconds(2000)); r && r->code() == pb::OK) {
      sub.apply_snapshot(first->envelope.run_id(), r->snapshot());
      view.apply(r->snapshot());
      have_snapshot = true;
    }
  }
  if (!have_snapshot) view.apply(first->envelope);
  if (!json) {
    std::string version = !view.status.pipewright_version().empty() ? view.status.pipewright_version()
                                                                    : sub.publisher_version();
    std::cout << "watching run " << sub.run_id() << " (" << view.status.job_name() << ") at " << endpoint
              << (version.empty() ? "" : ", pipewright " + version) << (have_snapshot ? ", from a snapshot" : "")
              << std::endl;
    print_line(view, sub.stats());
  }
  // The publisher is gone after three missed heartbeats.
  auto silence = milliseconds(3 * period_ms + 500);
  auto last_heard = std::chrono::steady_clock::now();
  auto next_print = last_heard + milliseconds(static_cast<long>(interval * 1000));
  int rc = 0;
  while (!view.terminal()) {
    auto m = sub.receive(milliseconds(50));
    auto now = std::chrono::steady_clock::now();
    if (m) {
      last_heard = now;
      view.apply(m->envelope);
    } else if (now - last_heard > silence) {
      std::cerr << "error: the publisher at " << endpoint << " went silent (no heartbeat for " << silence.count() << " ms)\n";
      rc = 1;
      break;
    }
    if (!json && now >= next_print) {
      print_line(view, sub.stats());
      next_print = now + milliseconds(static_cast<long>(interval * 1000));
    }
  }
  if (rc == 0 && view.status.state() != pb::FINISHED) rc = 1;
  if (json) {
    std::cout << result(view, sub, have_snapshot).dump(2) << std::endl;
  } else {
    print_line(view, sub.stats());
    std::cout << "run " << sub.run_id() << " " << ipc::to_string(view.status.state());
    if (!view.status.reason().empty()) std::cout << " (" << view.status.reason() << ")";
    const auto& s = sub.stats();
    std::cout << ": " << view.events << " events, " << s.gaps << " gaps (" << s.missed << " messages missed), "
              << s.malformed + s.unknown << " bad messages dropped" << std::endl;
  }
  return rc;
}

struct ControlArgs {
  std::string endpoint, what, setting;
  Keys keys;
  double timeout = 5;
};

int control(const ControlArgs& args) {
  std::string endpoint = args.endpoint;
  const std::string& what = args.what;
  auto timeout = milliseconds(static_cast<long>(args.timeout * 1000));
  if (what == "set" && args.setting.find('=') == std::string::npos) throw UsageError("set wants KEY=VALUE");
  static const std::vector<std::string> kCommands = {"pause", "resume", "stop", "checkpoint", "rebalance", "status", "set"};
  if (std::find(kCommands.begin(), kCommands.end(), what) == kCommands.end())
    throw UsageError("unknown control command \"" + what + "\" (pause, resume, stop, checkpoint, rebalance, status, set)");
  auto curve = curve_client(args.keys);
  auto send = [&](const std::string& to) {
    ipc::ControlClient c(to, "pipewright-control", curve ? &*curve : nullptr);
    std::optional<pb::ControlReply> r;
    if (what == "pause") r = c.pause(timeout);
    else if (what == "resume") r = c.resume(timeout);
    else if (what == "stop") r = c.stop(timeout);
    else if (what == "checkpoint") r = c.checkpoint(timeout);
    else if (what == "status") r = c.query_status(timeout);
    else if (what == "rebalance") r = c.rebalance(timeout);
    else r = c.set(args.setting.substr(0, args.setting.find('=')), args.setting.substr(args.setting.find('=') + 1), timeout);
    return std::make_pair(r, c.peer() == ipc::ControlClient::Peer::Refused);
  };
  // The endpoint as given, directly: a control endpoint answers in
  // milliseconds. A telemetry endpoint refuses the control client's
  // handshake (a publisher is no control server), which is known as fast;
  // only then is it subscribed to, for the heartbeat naming the control
  // endpoint. (Subscribing first cost every request up to 1.5 s.)
  auto [r, refused] = send(endpoint);
  if (!r && refused) {
    ipc::SubscriberOptions so;
    so.topics = {ipc::Topic::Heartbeat};
    so.curve = curve;
    std::string control_endpoint;
    {
      ipc::Subscriber probe(endpoint, so);
      if (probe.wait_connected(timeout)) control_endpoint = probe.control_endpoint();
    }
    if (control_endpoint.empty()) {
      std::cerr << "error: " << endpoint << " is not a control endpoint (it refused the handshake) and sent no "
                << "telemetry naming one within " << timeout.count() << " ms"
                << (curve ? " (or its keys do not accept ours)" : "") << "\n";
      return 1;
    }
    endpoint = reachable(control_endpoint, endpoint);
    r = send(endpoint).first;
  }
  if (!r) {
    std::cerr << "error: no reply from " << endpoint << " within " << timeout.count() << " ms\n";
    return 1;
  }
  if (r->code() != pb::OK) {
    std::cerr << "error: " << what << " refused: " << r->error() << "\n";
    return 1;
  }
  std::cout << what << ": ok, run " << ipc::to_string(r->status().state());
  if (!r->status().reason().empty()) std::cout << " (" << r->status().reason() << ")";
  std::cout << "\n";
  return 0;
}

}  // namespace

Action define_watch(Args& args) {
  auto a = std::make_shared<WatchArgs>();
  args.positional("ENDPOINT", a->endpoint, "the run's telemetry endpoint (tcp://127.0.0.1:PORT)");
  args.json(a->json);
  args.number("--timeout", a->timeout, 0, 86400, "S", "give up when no telemetry arrives within S seconds (default 10)");
  args.number("--interval", a->interval, 0, 86400, "S", "seconds between progress lines (default 1)");
  declare_keys(args, a->keys);
  return [a] { return watch(*a); };
}

Action define_control(Args& args) {
  auto a = std::make_shared<ControlArgs>();
  args.positional("ENDPOINT", a->endpoint, "the run's telemetry or control endpoint");
  args.positional("COMMAND", a->what, "pause, resume, stop, checkpoint, rebalance, status or set");
  args.positional("SETTING", a->setting, "for set: KEY=VALUE", false);
  args.number("--timeout", a->timeout, 0, 86400, "S", "seconds to wait for the reply (default 5)");
  declare_keys(args, a->keys);
  return [a] {
    if (a->what != "set" && !a->setting.empty())
      throw UsageError("unexpected argument \"" + a->setting + "\": only set takes KEY=VALUE");
    return control(*a);
  };
}

}  // namespace pw::cli

#include "gui/sources/live_run_source.h"

#include <chrono>
#include <iterator>
#include <memory>

#include "ipc/control.h"
#include "ipc/protocol.h"
#include "ipc/subscriber.h"

namespace pw::gui {

LiveRunSource::LiveRunSource(std::string endpoint, std::optional<ipc::CurveClient> curve, QObject* parent, int replica)
    : RunSource(parent), endpoint_(std::move(endpoint)), curve_(std::move(curve)), replica_(replica) {}

LiveRunSource::~LiveRunSource() { stop(); }

QString LiveRunSource::description() const {
  return QStringLiteral("live: %1%2").arg(QString::fromStdString(endpoint_), alive_ ? QString() : QStringLiteral(" (not responding)"));
}

void LiveRunSource::run() {
  using namespace std::chrono;
  ipc::SubscriberOptions so;
  so.curve = curve_;
  ipc::Subscriber sub(endpoint_, so);
  const ipc::CurveClient* curve = curve_ ? &*curve_ : nullptr;
  // Wait for the first message in short slices so stop() stays prompt.
  auto t0 = steady_clock::now();
  std::optional<ipc::Subscriber::Message> first;
  while (!first) {
    if (stopRequested()) return;
    first = sub.wait_connected(milliseconds(100));
    if (!first && steady_clock::now() - t0 > milliseconds(kSilenceMs))
      throw std::runtime_error("no telemetry from " + endpoint_ + " within " + std::to_string(kSilenceMs / 1000) + " s (" +
                               (curve_ ? "the coordinator refused this client's CURVE key, or is not running: check the "
                                         "server's public key and that the client key is in its authorized_clients"
                                       : "is the coordinator running?") + ")");
  }
  alive_ = true;
  emit status(QStringLiteral("connected to %1").arg(QString::fromStdString(endpoint_)));

  std::unique_ptr<ipc::ControlClient> control;
  RunBatch batch;
  RunInfo info;
  bool have_info = false;
  // Which replica's pipeline is shown, before any event arrives (the model
  // drops the others' by it).
  info.replica = replica_;
  batch.info = info;
  bool paused = false;
  auto last_msg = steady_clock::now(), last_publish = steady_clock::now();
  // The protocol's decoding is ipc's (ipc::decode); what is kept here is the studio's: the run's
  // info when it changes, pause and the final status as status lines.
  auto handle = [&](const ipc::Subscriber::Message& m) {
    ipc::RunTelemetry t;
    ipc::decode(m.envelope, t);
    t.logs.clear();  // the studio keeps no log view
    batch.append_records(std::move(t));
    for (auto& p : t.plans) batch.plans.push_back(std::move(p));
    if (!t.status) return;
    const auto& s = *t.status;
    if (!have_info || info.stages != s.stages || info.name != s.job_name) {
      info.name = s.job_name;
      info.stages = s.stages;
      info.source = "live: " + endpoint_;
      batch.info = info;
      have_info = true;
    }
    if (s.paused() != paused && (s.paused() || s.state == ipc::pb::RUNNING)) {
      paused = s.paused();
      batch.paused = paused;
      emit status(paused ? QStringLiteral("run paused") : QStringLiteral("run resumed"));
    }
    if (auto end = s.final()) {
      batch.finished = true;
      batch.status = *end;
      batch.status_reason = s.reason;
      emit status(QStringLiteral("run %1%2").arg(QLatin1String(ipc::to_string(s.state)),
                                                 s.reason.empty() ? QString() : QStringLiteral(": ") + QString::fromStdString(s.reason)));
    }
  };
  handle(*first);
  // A late joiner missed the run's status and plan: take them from a
  // snapshot. The snapshot is not applied to the subscriber: it counts
  // events without carrying them, so messages it covers must still reach
  // the model.
  if (!sub.control_endpoint().empty()) {
    control = std::make_unique<ipc::ControlClient>(sub.control_endpoint(), "studio", curve);
    if (auto reply = control->snapshot(milliseconds(1000)); reply && reply->has_snapshot()) {
      const auto& snap = reply->snapshot();
      ipc::pb::Envelope env;
      *env.mutable_status() = snap.status();
      handle({ipc::Topic::Status, env});
      if (snap.has_plan() && !snap.plan().plan_json().empty()) {
        *env.mutable_plan() = snap.plan();
        handle({ipc::Topic::Plan, env});
      }
    }
  }
  while (!stopRequested()) {
    auto msg = sub.receive(milliseconds(20));
    auto now = steady_clock::now();
    if (msg) {
      last_msg = now;
      if (!alive_) {
        alive_ = true;
        emit status(QStringLiteral("engine is responding again"));
      }
      handle(*msg);
    } else if (alive_ && now - last_msg > milliseconds(kSilenceMs)) {
      alive_ = false;
      emit failed(QStringLiteral("no telemetry or heartbeat from %1 for %2 s: the engine is gone")
                      .arg(QString::fromStdString(endpoint_)).arg(kSilenceMs / 1000));
    }
    if (batch.size() > 0 || batch.info || batch.finished || batch.paused) {
      if (batch.events.size() >= 65536 || batch.finished || now - last_publish > milliseconds(20)) {
        bool done = batch.finished;
        publish(std::move(batch));
        batch = RunBatch();
        last_publish = now;
        if (done) return;
      }
    }
    if (int req = pending_.exchange(0)) {
      if (!control && !sub.control_endpoint().empty()) control = std::make_unique<ipc::ControlClient>(sub.control_endpoint(), "studio", curve);
      if (!control) {
        emit status(QStringLiteral("the run advertises no control endpoint"));
        continue;
      }
      auto send = [&](const char* what, auto&& call) {
        auto reply = call();
        if (!reply)
          emit status(QStringLiteral("%1: no reply within 1 s (engine gone?)").arg(QLatin1String(what)));
        else if (reply->code() != ipc::pb::OK)
          emit status(QStringLiteral("%1 refused: %2").arg(QLatin1String(what), QString::fromStdString(reply->error())));
        else
          emit status(QStringLiteral("%1: done").arg(QLatin1String(what)));
      };
      const auto timeout = milliseconds(1000);
      if (req & kPause) send("pause", [&] { return control->pause(timeout); });
      if (req & kResume) send("resume", [&] { return control->resume(timeout); });
      if (req & kStop) send("stop", [&] { return control->stop(timeout); });
      if (req & kRebalance) send("rebalance", [&] { return control->rebalance(timeout); });
    }
  }
}

}  // namespace pw::gui

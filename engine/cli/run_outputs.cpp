#include "cli/run_outputs.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/interrupt.h"
#include "core/events/clock.h"
#ifdef PW_HAVE_DB
#include "db/run_writer.h"
#endif
#ifdef PW_HAVE_IPC
#include "ipc/curve.h"
#include "ipc/endpoints.h"
#endif

namespace pw::db {
// Complete where pw_db is absent, so unique_ptr<RunWriter> can be destroyed.
#ifndef PW_HAVE_DB
class RunWriter {};
#endif
}  // namespace pw::db

namespace pw::cli {

RunOutputs::RunOutputs(const RunOutputOptions& options, Run run) : opt_(options), run_(std::move(run)) {
#ifdef PW_HAVE_DB
  if (!opt_.db_path.empty()) {
    db::RunWriterOptions wo;
    wo.overwrite = opt_.overwrite;
    db_ = std::make_unique<db::RunWriter>(opt_.db_path, db::RunInfo{run_.run_id, run_.job_name, run_.source, run_.stages},
                                          wo);
    fanout_.add(db_.get());
  }
#else
  if (!opt_.db_path.empty()) throw UsageError("--db: this pipewright was built without SQLite");
#endif
#ifdef PW_HAVE_IPC
  if (!opt_.listen.empty()) {
    std::optional<ipc::CurveServer> curve;
    if (!opt_.curve_dir.empty()) curve = ipc::curve_server_from_dir(opt_.curve_dir);
    ipc::PublisherOptions po;
    po.endpoint = opt_.listen;
    po.allow_remote = opt_.allow_remote;
    po.curve = curve;
    pub_ = std::make_unique<ipc::Publisher>(run_.run_id, po);
    pub_->set_run_info(run_.job_name, run_.stages, run_.source, opt_.db_path);
    pub_->status(RunStatus::Running);
    ipc::ControlServerOptions co;
    // Control binds on the telemetry host, ephemeral port; clients learn it
    // from heartbeats.
    co.endpoint = pub_->endpoint().substr(0, pub_->endpoint().rfind(':')) + ":*";
    co.allow_remote = opt_.allow_remote;
    co.curve = curve;
    ctl_ = std::make_unique<ipc::ControlServer>([this](const ipc::pb::ControlRequest& r) { return handle(r); },
                                                pub_.get(), co);
    pub_->set_control_endpoint(ctl_->endpoint());
    fanout_.add(pub_.get());
    std::cerr << "telemetry " << pub_->endpoint() << "  control " << ctl_->endpoint() << std::endl;
    fanout_.endpoint("telemetry", pub_->endpoint());
    fanout_.endpoint("control", ctl_->endpoint());
    if (!opt_.db_path.empty()) {
      endpoints_file_ = std::filesystem::path(opt_.db_path).replace_extension(".endpoints.json").string();
      ipc::write_endpoints_file(endpoints_file_, run_.run_id, pub_->endpoint(), ctl_->endpoint());
    }
  }
#else
  if (!opt_.listen.empty()) throw UsageError("--listen: this pipewright was built without ZeroMQ/protobuf");
#endif
}

RunOutputs::~RunOutputs() {
#ifdef PW_HAVE_IPC
  ctl_.reset();  // before the publisher it reads snapshots from
#endif
  if (!endpoints_file_.empty()) {
    std::error_code ec;
    std::filesystem::remove(endpoints_file_, ec);
  }
}

void RunOutputs::begin(const nlohmann::json& job, const nlohmann::json* profile, const nlohmann::json* plan) {
  fanout_.job(job);
  if (profile) fanout_.profile(*profile);
  if (plan) fanout_.plan(1, 0, kInitialPlanReason, *plan);
}

void RunOutputs::log(LogLevel level, const std::string& source, const std::string& message) {
  if (fanout_.empty()) return;
  LogRecord l;
  l.t_ns = steady_now_ns();
  l.level = level;
  l.source = source;
  l.message = message;
  fanout_.log(l);
}

void RunOutputs::finish(RunStatus status, const std::string& reason, const nlohmann::json* summary, double linger_s) {
  if (!finished_) {
    finished_ = true;
    if (summary) fanout_.summary(*summary);
    fanout_.finish(status, reason);
  }
#ifdef PW_HAVE_IPC
  // In slices, so SIGINT/SIGTERM ends it (the run already has its final status).
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(linger_s);
  while (ctl_ && std::chrono::steady_clock::now() < until && !interrupt_signal())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
#endif
}

#ifdef PW_HAVE_IPC
void RunOutputs::set_control_handler(ControlHandler handler) {
  std::lock_guard lk(handler_mu_);
  handler_ = std::move(handler);
}

ipc::pb::ControlReply RunOutputs::handle(const ipc::pb::ControlRequest& req) {
  {
    std::lock_guard lk(handler_mu_);
    if (handler_) return handler_(req);
  }
  if (req.command_case() != ipc::pb::ControlRequest::kQueryStatus)
    return ipc::error_reply(ipc::pb::UNSUPPORTED, "this run takes no commands; it answers status queries");
  ipc::pb::ControlReply reply;
  *reply.mutable_status() = pub_->snapshot().status();
  return reply;
}
#endif

}  // namespace pw::cli

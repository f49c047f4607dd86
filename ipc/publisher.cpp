#include "ipc/publisher.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "ipc/connection_guard.h"

namespace pw::ipc {
namespace {

struct Queue : RunRecordBatch {
  std::vector<pb::PlanUpdate> plans;
  std::vector<pb::RunStatus> statuses;
  bool empty() const { return no_records() && plans.empty() && statuses.empty(); }
  void clear() { *this = Queue(); }
};

}  // namespace

struct Publisher::Impl {
  std::string run_id;
  PublisherOptions opt;
  zmq::socket_t sock{context(), zmq::socket_type::xpub};
  std::unique_ptr<ConnectionGuard> guard;  // on the sender thread, beside sock
  std::string endpoint;

  // Producers -> sender thread.
  std::mutex qmu;
  std::condition_variable wake, sent;
  Queue queue;
  std::uint64_t queued = 0, handed = 0;  // ticket counters for flush()
  bool stopping = false;

  // Published state, updated as seqs are assigned (snapshot consistency).
  mutable std::mutex smu;
  std::uint64_t seq[kTopicCount] = {};
  pb::RunStatus status;
  std::string control_endpoint;
  std::map<int, pb::StageState> stages;
  pb::Throughput last_throughput;
  pb::PlanUpdate last_plan;
  std::map<std::pair<int, int>, pb::SubnetState> subnets;
  std::uint64_t migrations = 0, events = 0;
  Stats stats;

  std::thread thread;

  template <class F>
  void push(F&& f) {
    std::lock_guard lk(qmu);
    bool was_empty = queue.empty();
    f(queue);
    ++queued;
    if (was_empty) wake.notify_one();
  }

  // Assigns the topic's next seq and folds the body into the state.
  void send(Topic t, pb::Envelope& env) {
    std::string bytes;
    {
      std::lock_guard lk(smu);
      env.set_protocol_major(kProtocolMajor);
      env.set_protocol_minor(kProtocolMinor);
      env.set_run_id(run_id);
      env.set_seq(++seq[static_cast<int>(t)]);
      env.set_sent_unix_ns(unix_ns());
      fold(env);
      env.SerializeToString(&bytes);
    }
    std::string_view topic = to_string(t);
    auto ok1 = sock.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    auto ok2 = ok1 ? sock.send(zmq::buffer(bytes), zmq::send_flags::dontwait) : ok1;
    std::lock_guard lk(smu);
    if (!ok1 || !ok2) ++stats.would_block;
    ++stats.messages;
    stats.bytes += bytes.size();
    if (env.has_events()) stats.events += env.events().events_size();
  }

  void fold(const pb::Envelope& env) {  // with smu held
    switch (env.body_case()) {
      case pb::Envelope::kEvents:
        for (const auto& e : env.events().events()) {
          fold_event(stages[e.stage()], e);
          ++events;
        }
        break;
      case pb::Envelope::kMemory:
        for (const auto& m : env.memory().samples()) fold_memory(stages[m.stage()], m);
        break;
      case pb::Envelope::kThroughput: last_throughput = env.throughput(); break;
      case pb::Envelope::kMigrations: migrations += env.migrations().migrations_size(); break;
      case pb::Envelope::kSubnets:
        for (const auto& s : env.subnets().states()) subnets[{s.subnet(), s.stage()}] = s;
        break;
      case pb::Envelope::kPlan: last_plan = env.plan(); break;
      case pb::Envelope::kStatus: status = env.status(); break;
      default: break;
    }
  }

  template <class T, class Add>
  void send_batched(Topic t, const std::vector<T>& items, Add add) {
    for (std::size_t i = 0; i < items.size(); i += opt.max_batch) {
      pb::Envelope env;
      std::size_t end = std::min(items.size(), i + opt.max_batch);
      for (std::size_t j = i; j < end; ++j) add(env, items[j]);
      send(t, env);
    }
  }

  void send_all(Queue& q) {
    send_batched(Topic::Events, q.events, [](pb::Envelope& env, const Event& e) { to_pb(e, env.mutable_events()->add_events()); });
    send_batched(Topic::Memory, q.memory,
                 [](pb::Envelope& env, const MemorySample& m) { to_pb(m, env.mutable_memory()->add_samples()); });
    for (const auto& x : q.throughput) {
      pb::Envelope env;
      to_pb(x, env.mutable_throughput());
      send(Topic::Throughput, env);
    }
    send_batched(Topic::Migrations, q.migrations,
                 [](pb::Envelope& env, const Migration& m) { to_pb(m, env.mutable_migrations()->add_migrations()); });
    send_batched(Topic::Subnets, q.subnet_states,
                 [](pb::Envelope& env, const SubnetState& s) { to_pb(s, env.mutable_subnets()->add_states()); });
    send_batched(Topic::Subnets, q.subnet_edges,
                 [](pb::Envelope& env, const SubnetEdge& e) { to_pb(e, env.mutable_subnets()->add_edges()); });
    send_batched(Topic::Logs, q.logs, [](pb::Envelope& env, const LogRecord& l) { to_pb(l, env.mutable_logs()->add_lines()); });
    for (const auto& p : q.plans) {
      pb::Envelope env;
      *env.mutable_plan() = p;
      send(Topic::Plan, env);
    }
    for (const auto& s : q.statuses) {
      pb::Envelope env;
      *env.mutable_status() = s;
      send(Topic::Status, env);
    }
  }

  void heartbeat() {
    pb::Envelope env;
    auto* h = env.mutable_heartbeat();
    h->set_unix_ns(unix_ns());
    {
      std::lock_guard lk(smu);
      h->set_control_endpoint(control_endpoint);
    }
    h->set_period_ms(static_cast<std::uint32_t>(opt.heartbeat.count()));
    h->set_pipewright_version(PW_VERSION);
    send(Topic::Heartbeat, env);
  }

  void configure() {
    sock.set(zmq::sockopt::sndhwm, opt.send_hwm);
    sock.set(zmq::sockopt::xpub_manual, 1);
    sock.set(zmq::sockopt::maxmsgsize, opt.curve ? opt.max_frame_bytes_curve : opt.max_frame_bytes);
    sock.set(zmq::sockopt::rcvhwm, opt.receive_hwm);
    sock.set(zmq::sockopt::linger, 200);
  }

  // Takes the subscriptions that arrived (at most `budget`, so a flood of
  // them cannot starve the sends) and passes on only the protocol's.
  void serve_subscriptions(int budget) {
    for (; budget > 0; --budget) {
      zmq::message_t m;
      if (!sock.recv(m, zmq::recv_flags::dontwait)) return;
      bool parts = false;
      while (m.more()) {  // a multi-part message is no subscription: drop it all
        zmq::message_t rest;
        if (!sock.recv(rest, zmq::recv_flags::dontwait)) break;
        m = std::move(rest);
        parts = true;
      }
      if (parts) m.rebuild(0);
      const auto* p = static_cast<const unsigned char*>(m.data());
      std::string_view topic(reinterpret_cast<const char*>(p) + 1, m.size() ? m.size() - 1 : 0);
      bool known = m.size() >= 1 && (p[0] == 0 || p[0] == 1) && (topic.empty() || topic_from_string(topic));
      if (known) {
        // In manual mode this applies to the connection the frame came from.
        if (p[0] == 1)
          sock.set(zmq::sockopt::subscribe, topic);
        else
          sock.set(zmq::sockopt::unsubscribe, topic);
      }
      {
        std::lock_guard lk(smu);
        ++(known ? stats.subscriptions : stats.refused_subscriptions);
      }
    }
  }

  void run_thread() {
    Queue local;
    auto next_beat = std::chrono::steady_clock::now();
    std::unique_lock lk(qmu);
    for (;;) {
      lk.unlock();
      serve_subscriptions(1000);
      if (guard) {
        int closed = guard->poll();
        if (closed > 0) {
          std::lock_guard slk(smu);
          stats.closed_connections += static_cast<std::uint64_t>(closed);
        }
      }
      lk.lock();
      auto now = std::chrono::steady_clock::now();
      if (now >= next_beat) {
        lk.unlock();
        heartbeat();
        lk.lock();
        next_beat = now + opt.heartbeat;
      }
      // Wakes at least every 10 ms to take subscriptions: a new subscriber
      // waits that long at most for its first message.
      wake.wait_until(lk, std::min(next_beat, now + std::chrono::milliseconds(10)),
                      [&] { return stopping || !queue.empty(); });
      if (queue.empty()) {
        if (stopping) break;
        continue;
      }
      std::swap(local, queue);
      std::uint64_t upto = queued;
      lk.unlock();
      send_all(local);
      local.clear();
      lk.lock();
      handed = upto;
      sent.notify_all();
    }
  }
};

Publisher::Publisher(std::string run_id, PublisherOptions options) : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  I.run_id = std::move(run_id);
  I.opt = options;
  if (I.opt.max_batch == 0) I.opt.max_batch = 1;
  if (I.opt.heartbeat.count() <= 0) I.opt.heartbeat = std::chrono::milliseconds(200);
  I.control_endpoint = options.control_endpoint;
  I.configure();
  if (I.opt.subscriber_burst_bytes > 0)
    I.guard = std::make_unique<ConnectionGuard>(
        context(), I.sock, ConnectionGuard::Options{I.opt.subscriber_burst_bytes, I.opt.subscriber_bytes_per_s});
  I.endpoint = bind_socket(I.sock, options.endpoint, options.allow_remote, options.curve ? &*options.curve : nullptr);
  I.status.set_state(pb::RUNNING);
  I.status.set_pipewright_version(PW_VERSION);
  I.thread = std::thread([this] { impl_->run_thread(); });
}

Publisher::~Publisher() {
  {
    std::lock_guard lk(impl_->qmu);
    impl_->stopping = true;
  }
  impl_->wake.notify_one();
  impl_->thread.join();
}

const std::string& Publisher::endpoint() const { return impl_->endpoint; }
const std::string& Publisher::run_id() const { return impl_->run_id; }

void Publisher::set_run_info(const std::string& job_name, int stages, const std::string& source, const std::string& db_path) {
  std::lock_guard lk(impl_->smu);
  auto& s = impl_->status;
  s.set_job_name(job_name);
  s.set_stages(stages);
  s.set_source(source);
  s.set_db_path(db_path);
}
void Publisher::set_control_endpoint(const std::string& endpoint) {
  std::lock_guard lk(impl_->smu);
  impl_->control_endpoint = endpoint;
}

void Publisher::on_event(const Event& e) {
  impl_->push([&](Queue& q) { q.events.push_back(e); });
}
void Publisher::on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) {
  MemorySample m;
  m.stage = stage;
  m.t_ns = t_ns;
  m.bytes = bytes;
  memory(m);
}
void Publisher::memory(const MemorySample& m) {
  impl_->push([&](Queue& q) { q.memory.push_back(m); });
}
void Publisher::throughput(const ThroughputSample& t) {
  impl_->push([&](Queue& q) { q.throughput.push_back(t); });
}
void Publisher::migration(const Migration& m) {
  impl_->push([&](Queue& q) { q.migrations.push_back(m); });
}
void Publisher::subnet_state(const SubnetState& s) {
  impl_->push([&](Queue& q) { q.subnet_states.push_back(s); });
}
void Publisher::subnet_edge(const SubnetEdge& e) {
  impl_->push([&](Queue& q) { q.subnet_edges.push_back(e); });
}
void Publisher::log(const LogRecord& l) {
  impl_->push([&](Queue& q) { q.logs.push_back(l); });
}
void Publisher::plan(int version, std::int64_t t_ns, const std::string& reason, const nlohmann::json& plan) {
  pb::PlanUpdate p;
  p.set_version(version);
  p.set_t_ns(t_ns);
  p.set_reason(reason);
  p.set_plan_json(plan.dump());
  impl_->push([&](Queue& q) { q.plans.push_back(std::move(p)); });
}
void Publisher::status(RunStatus s, const std::string& reason) {
  pb::RunStatus st;
  {
    std::lock_guard lk(impl_->smu);
    st = impl_->status;
  }
  st.set_state(to_pb(s));
  st.set_reason(reason);
  impl_->push([&](Queue& q) { q.statuses.push_back(std::move(st)); });
}
void Publisher::paused(bool p) {
  pb::RunStatus st;
  {
    std::lock_guard lk(impl_->smu);
    st = impl_->status;
  }
  st.set_state(p ? pb::PAUSED : pb::RUNNING);
  st.set_reason(p ? "paused by control request" : "");
  impl_->push([&](Queue& q) { q.statuses.push_back(std::move(st)); });
}

void Publisher::flush() {
  auto& I = *impl_;
  std::unique_lock lk(I.qmu);
  std::uint64_t target = I.queued;
  I.wake.notify_one();
  I.sent.wait(lk, [&] { return I.handed >= target || I.stopping; });
}

pb::Snapshot Publisher::snapshot() const {
  auto& I = *impl_;
  std::lock_guard lk(I.smu);
  pb::Snapshot s;
  *s.mutable_status() = I.status;
  for (const auto& [k, st] : I.stages) *s.add_stages() = st;
  for (int t = 0; t < kTopicCount; ++t) {
    auto* ts = s.add_last_seq();
    ts->set_topic(to_string(static_cast<Topic>(t)));
    ts->set_seq(I.seq[t]);
  }
  *s.mutable_throughput() = I.last_throughput;
  *s.mutable_plan() = I.last_plan;
  for (const auto& [k, st] : I.subnets) *s.add_subnets() = st;
  s.set_migrations(I.migrations);
  s.set_events(I.events);
  return s;
}

Publisher::Stats Publisher::stats() const {
  std::lock_guard lk(impl_->smu);
  return impl_->stats;
}

}  // namespace pw::ipc

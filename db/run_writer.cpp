#include "db/run_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/events/clock.h"
#include "db/schema.h"
#include "db/sqlite_util.h"

namespace pw::db {
namespace {

// Everything queued between two commits, one vector per table.
struct Batch : RunRecordBatch {
  std::vector<std::function<void(Connection&)>> ops;  // rare updates, applied in order after the rows
  std::size_t size() const { return record_count() + ops.size(); }
  void clear() {
    clear_records();
    ops.clear();
  }
};

// The writer thread's prepared statements.
struct Statements {
  Statement event, memory, throughput, migration, subnet_state, subnet_edge, log, stage_stat;
  explicit Statements(Connection& c)
      : event(c, "INSERT INTO events(stage, kind, start_ns, end_ns, microbatch, chunk, first_layer, last_layer, bytes, "
                 "replica) VALUES (?,?,?,?,?,?,?,?,?,?)"),
        memory(c, "INSERT INTO memory(t_ns, stage, bytes, parameters, optimizer, stashed, activations, swapped_out, "
                  "prefetched, budget, replica, peak) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"),
        throughput(c, "INSERT INTO throughput(t_ns, iteration, samples_per_s, iteration_ms) VALUES (?,?,?,?)"),
        migration(c, "INSERT INTO migrations(start_ns, end_ns, layer, from_stage, to_stage, bytes, plan_version) "
                     "VALUES (?,?,?,?,?,?,?)"),
        subnet_state(c, "INSERT INTO subnet_states(t_ns, subnet, stage, phase) VALUES (?,?,?,?)"),
        subnet_edge(c, "INSERT INTO subnet_edges(t_ns, resolved_ns, waiter, waited_for, stage, layer) VALUES (?,?,?,?,?,?)"),
        log(c, "INSERT INTO logs(t_ns, level, source, message) VALUES (?,?,?,?)"),
        stage_stat(c, "INSERT INTO stage_stats(stage, max_duration_ns) VALUES (?, ?) ON CONFLICT(stage) DO UPDATE SET "
                      "max_duration_ns = max(max_duration_ns, excluded.max_duration_ns)") {}
};

// The lock that makes one process the file's only writer: flock() on the
// database file itself, held from before anything is written until the
// writer is destroyed. Not SQLite's locking_mode=EXCLUSIVE, which would
// shut out the live readers (studio, watch) that follow a file while it is
// recorded; not a separate lock file, which outlives a crash and races
// with its own removal. The kernel drops a flock when its process dies
// (even by SIGKILL), so a crashed writer never leaves a stale lock. flock
// and SQLite's fcntl() locks are independent on local file systems.
// Returns the locked descriptor; throws DbError naming the reason.
int lock_for_writing(const std::string& path, bool overwrite) {
  struct stat st {};
  bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && !S_ISREG(st.st_mode)) throw DbRefused(path + ": not a regular file, refusing to record into it");
  if (existed && !overwrite)
    throw DbRefused(path + ": file exists (refusing to overwrite a recorded run; give --overwrite to replace a Pipewright run database)");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw DbRefused(path + ": cannot create: " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK)
      throw DbRefused(path + ": another pipewright process is recording into this file (it holds the writer's lock)");
    throw DbRefused(path + ": cannot lock: " + std::strerror(err));
  }
  // Written meanwhile by a writer that held the lock until now?
  struct stat now {};
  if (::fstat(fd, &now) == 0 && now.st_size > 0 && !existed && !overwrite) {
    ::close(fd);
    throw DbRefused(path + ": file exists (another process recorded into it just now; refusing to overwrite it)");
  }
  if (existed || now.st_size > 0) {
    // Only a Pipewright run is replaced: any other file (notes, another
    // program's database, an empty placeholder) is left as it was.
    try {
      check_file(path);
      Connection probe(path, Connection::Mode::ReadOnly);
      check_schema(probe);
    } catch (const DbError& e) {
      ::close(fd);
      throw DbRefused(std::string(e.what()) + "; refusing to overwrite it, even with --overwrite");
    }
    // Same inode, emptied: the lock taken above stays on the file SQLite
    // now writes, so no second writer can slip in between.
    for (const char* suffix : {"-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
    if (::ftruncate(fd, 0) != 0) {
      int err = errno;
      ::close(fd);
      throw DbRefused(path + ": cannot truncate: " + std::strerror(err));
    }
  }
  return fd;
}

// The file, its schema and its run row, committed in rollback-journal mode
// so that they land in the file itself, and only then WAL mode for the
// run's batches: a file that exists after this is a whole recording that a
// reader opens and --overwrite replaces, whatever happens to the WAL later
// (SQLite discards a WAL beside a database file of no pages).
void create_recording(const std::string& path, const RunInfo& info, std::unique_ptr<Connection>& conn) {
  conn = std::make_unique<Connection>(path, Connection::Mode::Create);
  auto& c = *conn;
  // Larger pages and rarer checkpoints: fewer writes per event. A crash
  // still loses only the uncommitted batch (committed frames are in the WAL).
  c.exec("PRAGMA page_size=16384; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536;");
  create_schema(c);
  Statement(c, "INSERT INTO run(id, run_id, name, source, status, stages, started_unix_ns) VALUES (1,?,?,?,?,?,?)")
      .bind(1, std::string_view(info.run_id))
      .bind(2, std::string_view(info.name))
      .bind(3, std::string_view(info.source))
      .bind(4, std::string_view(to_string(RunStatus::Running)))
      .bind(5, std::int64_t(info.stages))
      .bind(6, info.started_unix_ns)
      .run();
  c.exec("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=4096;");
}

// Removes the file the writer created (or emptied, for --overwrite) and
// could not make a recording of, with SQLite's files beside it; then drops
// the lock. Only while the path still names the locked file: never one
// another process has put there since.
void remove_created_file(const std::string& path, int& lock_fd) {
  struct stat ours {}, now {};
  if (lock_fd >= 0 && ::fstat(lock_fd, &ours) == 0 && ::stat(path.c_str(), &now) == 0 && ours.st_dev == now.st_dev &&
      ours.st_ino == now.st_ino) {
    for (const char* suffix : {"-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
    std::remove(path.c_str());
  }
  if (lock_fd >= 0) ::close(lock_fd);
  lock_fd = -1;
}

}  // namespace

struct RunWriter::Impl {
  std::string path;
  RunInfo info;
  RunWriterOptions opt;
  std::unique_ptr<Connection> conn;
  int lock_fd = -1;  // flock held for the writer's life (lock_for_writing)

  ~Impl() {
    // After the connection: closing any descriptor of the file would drop
    // SQLite's own fcntl locks in this process.
    conn.reset();
    if (lock_fd >= 0) ::close(lock_fd);
  }

  mutable std::mutex mu;
  std::condition_variable wake;   // writer: work to do
  std::condition_variable space;  // producers: queue below max_queued
  std::condition_variable done;   // flush(): a commit happened
  Batch pending;
  std::uint64_t queued_total = 0;     // records ever queued
  std::uint64_t committed_total = 0;  // records ever committed
  std::uint64_t flush_target = 0;
  bool stopping = false, finished = false;
  std::exception_ptr error;
  Stats stats;
  std::thread thread;

  void check_usable() {  // with mu held
    if (error) std::rethrow_exception(error);
    if (finished || stopping) throw DbError(path + ": run already finished, record ignored");
  }

  template <class F>
  void push(F&& add) {
    std::unique_lock lk(mu);
    check_usable();
    if (pending.size() >= opt.max_queued) {
      wake.notify_one();
      space.wait(lk, [&] { return pending.size() < opt.max_queued || error; });
      if (error) std::rethrow_exception(error);
    }
    add(pending);
    ++queued_total;
    if (pending.size() == opt.batch_records) wake.notify_one();
  }

  void write(Batch& b, Statements& st) {
    Transaction t(*conn);
    std::vector<std::int64_t> max_dur;  // by stage; -1 none
    for (const auto& e : b.events) {
      st.event.bind(1, std::int64_t(e.stage))
          .bind(2, std::int64_t(e.kind))
          .bind(3, e.start_ns)
          .bind(4, e.end_ns)
          .bind(5, std::int64_t(e.microbatch))
          .bind(6, std::int64_t(e.chunk))
          .bind(7, std::int64_t(e.first_layer))
          .bind(8, std::int64_t(e.last_layer))
          .bind(9, e.bytes)
          .bind(10, std::int64_t(e.replica))
          .run();
      if (e.stage >= 0) {
        if (static_cast<std::size_t>(e.stage) >= max_dur.size()) max_dur.resize(e.stage + 1, -1);
        max_dur[e.stage] = std::max(max_dur[e.stage], e.end_ns - e.start_ns);
      }
    }
    for (std::size_t s = 0; s < max_dur.size(); ++s)
      if (max_dur[s] >= 0) st.stage_stat.bind(1, std::int64_t(s)).bind(2, max_dur[s]).run();
    for (const auto& m : b.memory)
      st.memory.bind(1, m.t_ns)
          .bind(2, std::int64_t(m.stage))
          .bind(3, m.bytes)
          .bind_opt(4, m.parameters)
          .bind_opt(5, m.optimizer)
          .bind_opt(6, m.stashed)
          .bind_opt(7, m.activations)
          .bind_opt(8, m.swapped_out)
          .bind_opt(9, m.prefetched)
          .bind_opt(10, m.budget)
          .bind(11, std::int64_t(m.replica))
          .bind_opt(12, m.peak)
          .run();
    for (const auto& x : b.throughput)
      st.throughput.bind(1, x.t_ns).bind_opt(2, x.iteration).bind(3, x.samples_per_s).bind(4, x.iteration_ms).run();
    for (const auto& m : b.migrations)
      st.migration.bind(1, m.start_ns)
          .bind(2, m.end_ns)
          .bind(3, std::int64_t(m.layer))
          .bind(4, std::int64_t(m.from_stage))
          .bind(5, std::int64_t(m.to_stage))
          .bind(6, m.bytes)
          .bind_opt(7, m.plan_version)
          .run();
    for (const auto& s : b.subnet_states)
      st.subnet_state.bind(1, s.t_ns)
          .bind(2, std::int64_t(s.subnet))
          .bind(3, std::int64_t(s.stage))
          .bind(4, std::string_view(to_string(s.phase)))
          .run();
    for (const auto& e : b.subnet_edges)
      st.subnet_edge.bind(1, e.t_ns)
          .bind_opt(2, e.resolved_ns)
          .bind(3, std::int64_t(e.waiter))
          .bind(4, std::int64_t(e.waited_for))
          .bind(5, std::int64_t(e.stage))
          .bind(6, std::int64_t(e.layer))
          .run();
    for (const auto& l : b.logs)
      st.log.bind(1, l.t_ns)
          .bind(2, std::string_view(to_string(l.level)))
          .bind(3, std::string_view(l.source))
          .bind(4, std::string_view(l.message))
          .run();
    for (auto& op : b.ops) op(*conn);
    t.commit();
  }

  void run_thread() {
    Batch local;
    std::unique_ptr<Statements> st;
    try {
      st = std::make_unique<Statements>(*conn);
    } catch (...) {
      std::lock_guard lk(mu);
      error = std::current_exception();
    }
    std::unique_lock lk(mu);
    for (;;) {
      wake.wait_for(lk, opt.max_delay, [&] {
        return stopping || error || pending.size() >= opt.batch_records || flush_target > committed_total;
      });
      if (error) {
        // Nothing more will commit: wake whoever waits on a commit or on
        // room, then sleep until told to stop. (Looping back instead spun
        // with the lock held while a flush was pending, and the flushing
        // thread never got the lock to see the error: a run on a full disk
        // never ended.)
        done.notify_all();
        space.notify_all();
        wake.wait(lk, [&] { return stopping; });
        break;
      }
      if (pending.size() == 0) {
        if (stopping) break;
        continue;
      }
      std::swap(local, pending);
      std::uint64_t upto = queued_total;
      lk.unlock();
      space.notify_all();
      std::size_t n = local.size(), nev = local.events.size();
      std::exception_ptr err;
      try {
        write(local, *st);
      } catch (...) {
        err = std::current_exception();
      }
      local.clear();
      lk.lock();
      if (err) {
        error = err;
      } else {
        committed_total = upto;
        stats.records += n;
        stats.events += nev;
        ++stats.transactions;
      }
      done.notify_all();
    }
    st.reset();
  }

};

RunWriter::RunWriter(const std::string& path, RunInfo info, RunWriterOptions options)
    : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  I.path = path;
  I.opt = options;
  if (I.opt.batch_records == 0) I.opt.batch_records = 1;
  if (I.opt.max_queued < I.opt.batch_records) I.opt.max_queued = I.opt.batch_records;
  if (info.run_id.empty()) info.run_id = new_run_id();
  if (info.started_unix_ns == 0) info.started_unix_ns = unix_ns();
  I.info = info;
  I.lock_fd = lock_for_writing(path, options.overwrite);
  try {
    create_recording(I.path, I.info, I.conn);
  } catch (...) {
    // Nothing was recorded yet: a file left here would be a dead end (not
    // a run a reader opens, and one --overwrite refuses to replace).
    I.conn.reset();
    remove_created_file(path, I.lock_fd);
    throw;
  }
  I.thread = std::thread([this] { impl_->run_thread(); });
}

RunWriter::~RunWriter() {
  bool open;
  {
    std::lock_guard lk(impl_->mu);
    open = !impl_->finished && !impl_->stopping;
  }
  if (open) {
    try {
      finish(RunStatus::Failed, "the run ended without a final status");
    } catch (...) {
    }
  }
  {
    std::lock_guard lk(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_one();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void RunWriter::on_event(const Event& e) {
  impl_->push([&](Batch& b) { b.events.push_back(e); });
}
void RunWriter::on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) {
  MemorySample m;
  m.stage = stage;
  m.t_ns = t_ns;
  m.bytes = bytes;
  memory(m);
}
void RunWriter::memory(const MemorySample& m) {
  impl_->push([&](Batch& b) { b.memory.push_back(m); });
}
void RunWriter::throughput(const ThroughputSample& t) {
  impl_->push([&](Batch& b) { b.throughput.push_back(t); });
}
void RunWriter::migration(const Migration& m) {
  impl_->push([&](Batch& b) { b.migrations.push_back(m); });
}
void RunWriter::subnet_state(const SubnetState& s) {
  impl_->push([&](Batch& b) { b.subnet_states.push_back(s); });
}
void RunWriter::subnet_edge(const SubnetEdge& e) {
  impl_->push([&](Batch& b) { b.subnet_edges.push_back(e); });
}
void RunWriter::log(const LogRecord& l) {
  impl_->push([&](Batch& b) { b.logs.push_back(l); });
}
void RunWriter::subnet(std::int32_t id, const nlohmann::json& choices) {
  std::string js = choices.dump();
  impl_->push([&](Batch& b) {
    b.ops.push_back([id, js](Connection& c) {
      Statement s(c, "INSERT OR REPLACE INTO subnets(id, choices_json) VALUES (?, ?)");
      s.bind(1, std::int64_t(id)).bind(2, std::string_view(js)).run();
    });
  });
}
void RunWriter::plan(int version, std::int64_t t_ns, const std::string& reason, const nlohmann::json& plan) {
  std::string js = plan.dump();
  impl_->push([&](Batch& b) {
    b.ops.push_back([version, t_ns, reason, js](Connection& c) {
      Statement s(c, "INSERT OR REPLACE INTO plans(version, t_ns, reason, plan_json) VALUES (?,?,?,?)");
      s.bind(1, std::int64_t(version)).bind(2, t_ns).bind(3, std::string_view(reason)).bind(4, std::string_view(js)).run();
    });
  });
}
namespace {
std::function<void(Connection&)> set_run_column(const char* column, std::string value) {
  std::string sql = std::string("UPDATE run SET ") + column + " = ? WHERE id = 1";
  return [sql, value](Connection& c) { Statement(c, sql).bind(1, std::string_view(value)).run(); };
}
}  // namespace
void RunWriter::job(const nlohmann::json& j) {
  impl_->push([&](Batch& b) { b.ops.push_back(set_run_column("job_json", j.dump())); });
}
void RunWriter::profile(const nlohmann::json& j) {
  impl_->push([&](Batch& b) { b.ops.push_back(set_run_column("profile_json", j.dump())); });
}
void RunWriter::summary(const nlohmann::json& j) {
  impl_->push([&](Batch& b) { b.ops.push_back(set_run_column("summary_json", j.dump())); });
}
void RunWriter::endpoint(const std::string& name, const std::string& endpoint) {
  impl_->push([&](Batch& b) {
    b.ops.push_back([name, endpoint](Connection& c) {
      Statement(c, "INSERT OR REPLACE INTO endpoints(name, endpoint) VALUES (?, ?)")
          .bind(1, std::string_view(name))
          .bind(2, std::string_view(endpoint))
          .run();
    });
  });
}

void RunWriter::flush() {
  auto& I = *impl_;
  std::unique_lock lk(I.mu);
  if (I.error) std::rethrow_exception(I.error);
  I.flush_target = std::max(I.flush_target, I.queued_total);
  I.wake.notify_one();
  I.done.wait(lk, [&] { return I.committed_total >= I.flush_target || I.error; });
  if (I.error) std::rethrow_exception(I.error);
}

void RunWriter::finish(RunStatus status, const std::string& reason) {
  auto& I = *impl_;
  std::string st = to_string(status);
  std::int64_t ended = unix_ns();
  bool failed_before = false;
  {
    std::lock_guard lk(I.mu);
    failed_before = static_cast<bool>(I.error);
  }
  if (failed_before) return finish_after_error(reason);
  I.push([&](Batch& b) {
    b.ops.push_back([st, reason, ended](Connection& c) {
      Statement(c, "UPDATE run SET status = ?, reason = ?, ended_unix_ns = ? WHERE id = 1")
          .bind(1, std::string_view(st))
          .bind(2, std::string_view(reason))
          .bind(3, ended)
          .run();
    });
  });
  try {
    flush();
  } catch (const DbError&) {
    return finish_after_error(reason);
  }
  {
    std::lock_guard lk(I.mu);
    I.stopping = true;
  }
  I.wake.notify_one();
  if (I.thread.joinable()) I.thread.join();
  {
    std::lock_guard lk(I.mu);
    I.finished = true;
  }
  create_deferred_indexes(*I.conn);
  // One self-contained file to share: fold the WAL in and leave WAL mode.
  // Best effort: with a live reader attached (the studio) the file stays
  // in WAL mode, equally valid, and SQLite folds the WAL in later.
  I.conn->set_busy_timeout(0);
  try {
    I.conn->exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;");
  } catch (const DbError&) {
  }
  I.conn.reset();
}

// The writer thread stopped at a failed transaction (disk full: the batch
// rolled back, what was committed before stays). The final status is one
// small row update, and the space may be back by now (the transaction's own
// pages, a worker's removed temporary checkpoint): try it once, as failed,
// with both reasons; if even that fails the file keeps status running with no
// end time, the mark of a run that did not end cleanly. Rethrows the
// writer's error either way, so the caller knows records were lost.
void RunWriter::finish_after_error(const std::string& reason) {
  auto& I = *impl_;
  std::exception_ptr error;
  {
    std::lock_guard lk(I.mu);
    error = I.error;
    I.stopping = true;
  }
  I.wake.notify_one();
  if (I.thread.joinable()) I.thread.join();
  std::string why;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::string full = (reason.empty() ? "" : reason + "; ") + "the database stopped recording: " + why;
  try {
    I.conn->set_busy_timeout(0);
    Statement(*I.conn, "UPDATE run SET status = ?, reason = ?, ended_unix_ns = ? WHERE id = 1")
        .bind(1, std::string_view(to_string(RunStatus::Failed)))
        .bind(2, std::string_view(full))
        .bind(3, unix_ns())
        .run();
  } catch (const DbError&) {
  }
  {
    std::lock_guard lk(I.mu);
    I.finished = true;
  }
  I.conn.reset();
  std::rethrow_exception(error);
}

RunWriter::Stats RunWriter::stats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}
const std::string& RunWriter::run_id() const { return impl_->info.run_id; }
const std::string& RunWriter::path() const { return impl_->path; }

}  // namespace pw::db

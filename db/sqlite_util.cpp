#include "db/sqlite_util.h"

#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace pw::db {
namespace {
// Why a write failed when the system did not say (see with_system_error):
// a file system with no room left is ENOSPC, a process under a file-size
// limit (ulimit -f) EFBIG, a read-only mount EROFS; 0 when none holds.
int probable_errno(const std::string& path) {
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/') + 1);
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0) {
    if (fs.f_flag & ST_RDONLY) return EROFS;
    if (static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < (1u << 20)) return ENOSPC;
  }
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) return EFBIG;
  return 0;
}

// SQLite says "database or disk is full" or "disk I/O error"; the system's
// errno (ENOSPC, EFBIG, EIO) says which, in the words every writer uses.
// sqlite3_system_errno is the errno at the time SQLite noticed, which a
// rollback in between may have cleared; the main file's own last errno
// survives it. SQLite reports a short write (the file-size limit reached
// mid-page) as SQLITE_FULL with no errno at all: then the file system and
// the process's limits tell which it was.
std::string with_system_error(sqlite3* db, const std::string& path, int rc, std::string reason) {
  int primary = rc & 0xff;
  if (primary != SQLITE_FULL && primary != SQLITE_IOERR) return reason;
  int err = sqlite3_system_errno(db);
  if (err <= 0) {
    int last = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &last) == SQLITE_OK) err = last;
  }
  if (err <= 0) err = probable_errno(path);
  // With no page limit set, full means the disk.
  if (err <= 0 && primary == SQLITE_FULL) err = ENOSPC;
  return err > 0 ? reason + " (" + std::strerror(err) + ")" : reason;
}

// What an SQLite error says about a recording's contents, in our words;
// null for errors that say nothing about them (busy, out of memory, I/O:
// the system's reason is reported instead). SQLITE_ERROR is what a query
// meets when a table or column it names is gone or is something else: the
// reader's queries are fixed, so in a file that passed the open's checks
// it means the schema was changed under it.
const char* damage_reason(int primary) {
  switch (primary) {
    case SQLITE_CORRUPT:
      return "damaged pages (the file is corrupt or truncated)";
    case SQLITE_NOTADB:
      return "not an SQLite database any more (its header is damaged)";
    case SQLITE_ERROR:
    case SQLITE_SCHEMA:
      return "its tables are not the ones a Pipewright writer made (a table or column was removed or changed)";
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
    case SQLITE_FORMAT:
      return "it holds a value of a type or size this version cannot read";
  }
  return nullptr;
}
}  // namespace

Connection::Connection(const std::string& path, Mode mode) : path_(path) {
  int flags = mode == Mode::Create     ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
              : mode == Mode::ReadWrite ? SQLITE_OPEN_READWRITE
                                        : SQLITE_OPEN_READONLY;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw DbError(path + ": cannot open: " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  // A live writer holds the lock only for a commit; wait rather than fail.
  sqlite3_busy_timeout(db_, 5000);
}

void Connection::set_busy_timeout(int ms) { sqlite3_busy_timeout(db_, ms); }

Connection::~Connection() { sqlite3_close_v2(db_); }

void Connection::check(int rc, const char* what) const {
  if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return;
  fail(rc, what, sqlite3_errmsg(db_));
}

void Connection::fail(int rc, const std::string& what, std::string reason) const {
  int primary = rc & 0xff;
  if (recording_)
    if (const char* damage = damage_reason(primary)) throw DamagedRecording(path_, damage);
  if (primary == SQLITE_NOTADB) reason = "not an SQLite database (" + reason + ")";
  if (primary == SQLITE_CORRUPT) reason = "the file is damaged or truncated (" + reason + ")";
  throw DbError(path_ + ": " + (what.empty() ? "" : what + ": ") + with_system_error(db_, path_, rc, reason));
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    fail(rc, "", msg);
  }
}

Statement::Statement(Connection& c, const std::string& sql) : c_(c) {
  c_.check(sqlite3_prepare_v3(c.handle(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &st_, nullptr),
           "prepare statement");
}
Statement::~Statement() { sqlite3_finalize(st_); }

Statement& Statement::bind(int i, std::int64_t v) {
  sqlite3_bind_int64(st_, i, v);
  return *this;
}
Statement& Statement::bind(int i, double v) {
  sqlite3_bind_double(st_, i, v);
  return *this;
}
Statement& Statement::bind(int i, std::string_view v) {
  sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind_null(int i) {
  sqlite3_bind_null(st_, i);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) {
    sqlite3_reset(st_);
    return false;
  }
  sqlite3_reset(st_);
  c_.check(rc, "query");
  return false;
}

void Statement::run() {
  while (step()) {
  }
}
void Statement::reset() { sqlite3_reset(st_); }

std::int64_t Statement::int64(int col) const { return sqlite3_column_int64(st_, col); }
double Statement::real(int col) const { return sqlite3_column_double(st_, col); }
std::string Statement::text(int col) const {
  auto* p = sqlite3_column_text(st_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(st_, col)) : std::string();
}
bool Statement::is_null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }

Transaction::Transaction(Connection& c) : c_(c) { c_.exec("BEGIN IMMEDIATE"); }
Transaction::~Transaction() {
  if (!done_) {
    try {
      c_.exec("ROLLBACK");
    } catch (...) {
    }
  }
}
void Transaction::commit() {
  c_.exec("COMMIT");
  done_ = true;
}

}  // namespace pw::db

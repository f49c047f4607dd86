#include "db/sqlite_util.h"

#include <sqlite3.h>

#include <cerrno>
#include <cstring>

namespace pw::db {
namespace {
// SQLite says "database or disk is full" or "disk I/O error"; the system's
// errno (ENOSPC, EFBIG, EIO) says which, in the words every writer uses.
std::string with_system_error(sqlite3* db, int rc, std::string reason) {
  int primary = rc & 0xff;
  if (primary != SQLITE_FULL && primary != SQLITE_IOERR) return reason;
  int err = sqlite3_system_errno(db);
  // The unix VFS returns SQLITE_FULL for ENOSPC without keeping the errno
  // ("not a system error"); we set no page limit, so full means the disk.
  if (err <= 0 && primary == SQLITE_FULL) err = ENOSPC;
  return err > 0 ? reason + " (" + std::strerror(err) + ")" : reason;
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
  int primary = rc & 0xff;
  std::string reason = sqlite3_errmsg(db_);
  if (primary == SQLITE_NOTADB) reason = "not an SQLite database (" + reason + ")";
  if (primary == SQLITE_CORRUPT) reason = "the file is damaged or truncated (" + reason + ")";
  throw DbError(path_ + ": " + what + ": " + with_system_error(db_, rc, reason));
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    int primary = rc & 0xff;
    if (primary == SQLITE_NOTADB) msg = "not an SQLite database (" + msg + ")";
    if (primary == SQLITE_CORRUPT) msg = "the file is damaged or truncated (" + msg + ")";
    throw DbError(path_ + ": " + with_system_error(db_, rc, msg));
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

#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/spec/refusal.h"

struct sqlite3;
struct sqlite3_stmt;

namespace pw::db {

// Every failure of pw_db: the message names the file and the reason.
struct DbError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A file refused before anything is read from or written to it (a foreign
// or existing file for the writer, another writer's lock, a damaged or
// hostile run for the reader): the command exits 2 (pw::Refusal).
struct DbRefused : DbError, Refusal {
  using DbError::DbError;
};

// An open SQLite connection (RAII). Not thread-safe: one owner thread.
class Connection {
 public:
  enum class Mode { Create, ReadWrite, ReadOnly };
  Connection(const std::string& path, Mode mode);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void exec(const std::string& sql);
  void set_busy_timeout(int ms);
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // Throws DbError "<path>: <what>: <sqlite message>" when rc is an error.
  void check(int rc, const char* what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// A prepared statement, reset after each step cycle. Bind indices start at 1.
class Statement {
 public:
  Statement(Connection& c, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, std::int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, std::string_view v);
  Statement& bind_null(int i);
  // Binds v, or NULL when v < 0 (optional integer columns).
  Statement& bind_opt(int i, std::int64_t v) { return v < 0 ? bind_null(i) : bind(i, v); }
  // True while rows remain; false at the end (then the statement is reset).
  bool step();
  // Runs a statement that returns no rows, then resets it.
  void run();
  void reset();

  std::int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  bool is_null(int col) const;

 private:
  Connection& c_;
  sqlite3_stmt* st_ = nullptr;
};

// BEGIN ... COMMIT, rolled back when destroyed without commit().
class Transaction {
 public:
  explicit Transaction(Connection& c);
  ~Transaction();
  void commit();

 private:
  Connection& c_;
  bool done_ = false;
};

}  // namespace pw::db

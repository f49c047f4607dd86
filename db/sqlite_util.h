#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "db/errors.h"

struct sqlite3;
struct sqlite3_stmt;

namespace pw::db {

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
  // Throws DbError "<path>: <what>: <sqlite message>" when rc is an error
  // (DamagedRecording when it means damage and the file is a recording).
  void check(int rc, const char* what) const;
  // From now on the file is a recording this connection reads or adds to:
  // an error that says its contents are not what the writer made (corrupt
  // pages, a table or column gone, a value of another type) is
  // DamagedRecording, in our words, wherever the query that met it is.
  void holds_recording() { recording_ = true; }

 private:
  [[noreturn]] void fail(int rc, const std::string& what, std::string sqlite_message) const;
  sqlite3* db_ = nullptr;
  std::string path_;
  bool recording_ = false;
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

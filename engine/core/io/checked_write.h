#pragma once
// Every file Pipewright writes goes through here: a run directory's own
// files (write_file_atomically) and the files a command writes for the user
// (OutputTarget: --trace, -o, export, keys, the studio's save dialogs). One
// way to write (a temporary name in the same directory, every system call
// checked, fsync, rename), so a failure leaves the old file whole; and one
// output rule for user files (docs/cli.md, "Output files").
#include <sys/types.h>

#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec/refusal.h"

namespace pw {

// The error a failed write throws: a runtime_error whose text says what,
// where and why, keeping errno for callers that tell a full disk apart.
class WriteError : public std::runtime_error {
 public:
  WriteError(const std::string& what, const std::string& path, int err);
  int error_number() const { return err_; }

 private:
  int err_;
};

// The text a write error carries, the same for every writer
// ("writing events file F: No space left on device").
std::string write_error_text(const std::string& what, const std::string& path, int err);

// Writes `bytes` to `path` through a temporary file beside it (NAME.XXXXXX.tmp),
// fsync and rename, so the file is either the old one or the whole new one.
// On a full disk (ENOSPC), a file-size limit (EFBIG) or any other error the
// temporary file is removed and WriteError names `what`, the file and the
// reason ("writing checkpoint run/checkpoint/4/stage0.pt: No space left on
// device"). Replaces whatever is at `path`: for files the program owns (a run
// directory's); a file the user names goes through OutputTarget.
void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& what,
                           mode_t mode = 0644);

// Whether the file starts with SQLite's header ("SQLite format 3\0"): every
// run database does. The one test the output rule and the run database
// reader (db/schema.cpp) make of it.
bool has_sqlite_header(const unsigned char* bytes, std::size_t n);
bool is_sqlite_file(const std::string& path);

// A refused output (exit 2): a file that exists without --overwrite, a run
// database a command that does not write run databases would replace, a
// directory that cannot take the file. Names the option.
struct OutputRefused : std::runtime_error, Refusal {
  using std::runtime_error::runtime_error;
};

// A file the command reads (its job, a profile): no output of the command
// replaces it, with or without --overwrite (`simulate J --trace J
// --overwrite` once turned the job being read into a trace). Compared by
// device and inode, not by name, so every name of the file is caught
// (./job.json, an absolute path, a symbolic or hard link).
struct InputFile {
  std::string path;
  std::string role;  // what it is to the command, in the refusal: "the job file", "the profile"
};

// A file a command writes because the user named it.
struct OutputTarget {
  std::string path;
  std::string option;      // how the user named it: "--trace", "-o", "keys DIR"; in every message
  bool overwrite = false;  // --overwrite (or the studio's confirmed save dialog)
  std::vector<InputFile> inputs;  // the files the command reads: never replaced
};

// OutputRefused (naming `option`, `path` and the input's role) when `path`
// is, by device and inode, one of `inputs`; nothing when it does not exist.
// check_output makes this check; a command also makes it for files it
// writes outside the output rule (a run directory's job.json).
void refuse_input(const std::string& path, const std::string& option, const std::vector<InputFile>& inputs);

// The output rule, checked before any work (so a long profile or run is not
// lost to it at the end) and again as the file is written:
// - a file the command reads (`inputs`) never;
// - an existing file is replaced only with `overwrite`;
// - an SQLite file (a run database) never: only --db writes run databases;
// - only a regular file is replaced (not a directory, a device, a pipe);
// - the directory must exist and take a new file.
// Throws OutputRefused naming the option.
void check_output(const OutputTarget& t);

// check_output, then write_file_atomically. A directory that refuses the
// temporary file is OutputRefused (exit 2); a write that fails after it (a
// full disk) is WriteError (exit 1). Either way the old file is untouched.
void write_output(const OutputTarget& t, std::string_view bytes, mode_t mode = 0644);

// An output another process writes (export-subnet's worker): reserve() runs
// check_output and creates an empty temporary file beside the target for it
// to write; place() moves it into place under the rule (or removes it and
// throws OutputRefused). Unplaced, the destructor removes it.
class OutputByOther {
 public:
  explicit OutputByOther(OutputTarget target);
  ~OutputByOther();
  OutputByOther(const OutputByOther&) = delete;
  OutputByOther& operator=(const OutputByOther&) = delete;
  const std::string& temp_path() const { return tmp_; }
  void place();

 private:
  OutputTarget target_;
  std::string tmp_;
  bool placed_ = false;
};

// A streamed output (a trace of millions of events): check_output when
// constructed, the text goes to the temporary file, and commit() checks
// every buffered write, fsyncs and renames it into place. Destroyed without
// commit() (an exception unwinding), the temporary file is removed and the
// old file is left as it was.
class OutputStream {
 public:
  explicit OutputStream(OutputTarget target);
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  std::ostream& stream() { return out_; }
  void commit();  // throws WriteError (full disk) or OutputRefused (the file appeared meanwhile)
  const std::string& path() const { return target_.path; }

 private:
  class FdBuf;
  OutputTarget target_;
  std::string tmp_;
  std::unique_ptr<FdBuf> buf_;
  std::ostream out_;
  bool done_ = false;
};

}  // namespace pw

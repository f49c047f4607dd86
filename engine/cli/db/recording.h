#pragma once
// The one path from a damaged recording to the user, for every command that
// reads one (replay, explain, export, compare, search, export-subnet). The
// reader (db/run_reader.h) reports the damage it finds itself, at open or in
// the middle of a query, as db::DamagedRecording; what the recording holds
// that a command then cannot interpret (a recorded job, plan or summary whose
// fields are of other types than the writer gives them) is damage of the same
// file, and is reported the same way. run_command prints it and exits 2 like
// every refusal: the file named, no SQLite or JSON library text.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "db/errors.h"

namespace pw::cli {

// Runs `read` (which interprets what the recording at `path` holds);
// turns a JSON library error met there into db::DamagedRecording.
template <class F>
decltype(auto) interpret_recording(const std::string& path, F&& read) {
  try {
    return std::forward<F>(read)();
  } catch (const nlohmann::json::exception&) {
    // Its text names the library's own error id and the value's type, not
    // the field: the file and what is wrong with it say more.
    throw db::DamagedRecording(path,
                               "a recorded document (the job, a plan, the profile or the summary) has a field of "
                               "another type or shape than Pipewright writes");
  }
}

}  // namespace pw::cli

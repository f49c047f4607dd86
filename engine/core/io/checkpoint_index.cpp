#include "core/io/checkpoint_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/io/checked_write.h"
#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

constexpr std::size_t kMaxIndexBytes = 1u << 20;  // a few hundred stage files at most

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string quoted(const nlohmann::json& v) { return clip_for_message(v.dump(), 80); }

}  // namespace

FileDigest digest_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw CheckpointRefused(path + ": cannot be read: " + std::strerror(errno));
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  FileDigest d;
  static thread_local std::vector<unsigned char> buf(1 << 20);
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      throw CheckpointRefused(path + ": cannot be read: " + std::strerror(err));
    }
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) h = (h ^ buf[static_cast<std::size_t>(i)]) * 0x100000001b3ULL;
    d.bytes += static_cast<std::uint64_t>(n);
  }
  close(fd);
  d.fnv1a64 = hex64(h);
  return d;
}

void write_checkpoint_index(const std::string& run_dir, const std::string& key, std::int64_t position,
                            const std::vector<std::string>& files, bool elsewhere_if_missing) {
  namespace fs = std::filesystem;
  const std::string rel = "checkpoint/" + std::to_string(position);
  nlohmann::json listed = nlohmann::json::object();
  for (const auto& f : files) {
    const std::string path = (fs::path(run_dir) / rel / f).string();
    if (std::error_code ec; elsewhere_if_missing && !fs::exists(path, ec)) {
      listed[f] = {{"elsewhere", true}};
      continue;
    }
    FileDigest d = digest_file(path);
    listed[f] = {{"bytes", d.bytes}, {"fnv1a64", d.fnv1a64}};
  }
  nlohmann::json meta{{key, position}, {"dir", rel}, {"files", listed}};
  write_file_atomically((fs::path(run_dir) / "checkpoint" / "meta.json").string(), meta.dump() + "\n",
                        "checkpoint index");
}

CheckpointIndex read_checkpoint_index(const std::string& run_dir, const std::string& key,
                                      const std::vector<std::string>& files, bool accept_elsewhere) {
  namespace fs = std::filesystem;
  CheckpointIndex out;
  out.index_file = (fs::path(run_dir) / "checkpoint" / "meta.json").string();
  const std::string& index = out.index_file;
  auto refuse = [&](const std::string& why) { throw CheckpointRefused(index + ": " + why); };
  struct stat st {};
  if (lstat(index.c_str(), &st) != 0)
    throw CheckpointRefused(run_dir + ": no checkpoint (checkpoint/meta.json) to resume from");
  nlohmann::json meta;
  try {
    if (!S_ISREG(st.st_mode)) refuse("not a regular file");
    meta = parse_bounded_json(read_bounded_file(index, kMaxIndexBytes, "checkpoint index"));
  } catch (const SpecError& e) {
    refuse("not a checkpoint index: " + e.path() + ": " + e.reason());
  }
  if (!meta.is_object()) refuse("not a checkpoint index (a JSON object)");

  const nlohmann::json* pos = meta.contains(key) ? &meta[key] : nullptr;
  if (!pos) refuse("\"" + key + "\" is missing (a pipeline run's index holds \"iteration\", a supernet run's \"subnet\")");
  if (!pos->is_number_integer()) refuse("\"" + key + "\" is " + quoted(*pos) + ", not an integer");
  // nlohmann reads a non-negative integer as unsigned: both kinds bounded.
  const bool fits = pos->is_number_unsigned() ? pos->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX)
                                              : pos->get<std::int64_t>() >= 0;
  if (!fits || pos->get<std::int64_t>() < 1)
    refuse("\"" + key + "\" is " + quoted(*pos) + "; a checkpoint is taken after at least one step");
  out.position = pos->get<std::int64_t>();

  // The directory is not taken from the file: it is the position's, inside
  // this run directory, and not a link out of it.
  const std::string rel = "checkpoint/" + std::to_string(out.position);
  if (meta.contains("dir") && meta["dir"] != rel)
    refuse("\"dir\" is " + quoted(meta["dir"]) + ", not \"" + rel + "\" (the directory of " + key + " " +
           std::to_string(out.position) + "); a checkpoint stays inside its run directory");
  out.dir = (fs::path(run_dir) / rel).string();
  for (const std::string& d : {(fs::path(run_dir) / "checkpoint").string(), out.dir})
    if (st = {}; lstat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      refuse("names " + d + ", which is " + (S_ISLNK(st.st_mode) ? "a link" : "not a directory") +
             "; a checkpoint stays inside its run directory");

  const nlohmann::json* listed = meta.contains("files") ? &meta["files"] : nullptr;
  if (!listed || !listed->is_object())
    refuse("no \"files\" object with each file's size and digest (an index written before they were recorded "
           "cannot be verified)");
  std::set<std::string> want(files.begin(), files.end()), have;
  for (const auto& [name, v] : listed->items()) have.insert(name);
  if (want != have) {
    std::string missing, extra;
    for (const auto& f : want)
      if (!have.count(f)) missing += (missing.empty() ? "" : ", ") + f;
    for (const auto& f : have)
      if (!want.count(f)) extra += (extra.empty() ? "" : ", ") + clip_for_message(f, 60);
    refuse("\"files\" does not match this run's stages" + (missing.empty() ? "" : "; missing " + missing) +
           (extra.empty() ? "" : "; not expected " + clip_for_message(extra, 200)) +
           " (pipeline.stages must be the checkpoint's)");
  }
  for (const auto& f : files) {
    const nlohmann::json& rec = (*listed)[f];
    const std::string path = (fs::path(out.dir) / f).string();
    if (rec.is_object() && rec.contains("elsewhere") && rec["elsewhere"] == true) {
      if (accept_elsewhere) continue;
      refuse("\"files\"." + f + " was saved on another host (an --attach run): resume it with --attach, "
             "or copy the files here and checkpoint again");
    }
    if (!rec.is_object() || !rec.contains("bytes") || !rec["bytes"].is_number_unsigned() ||
        !rec.contains("fnv1a64") || !rec["fnv1a64"].is_string())
      refuse("\"files\"." + f + ": needs \"bytes\" (an unsigned integer) and \"fnv1a64\" (a string)");
    if (st = {}; lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw CheckpointRefused(path + ": " + (S_ISLNK(st.st_mode) ? "a link, not the checkpoint's file"
                                                                 : "missing or not a regular file") +
                              " (listed in " + index + ")");
    const auto bytes = rec["bytes"].get<std::uint64_t>();
    if (static_cast<std::uint64_t>(st.st_size) != bytes)
      throw CheckpointRefused(path + ": " + std::to_string(st.st_size) + " bytes, " + index + " recorded " +
                              std::to_string(bytes) + "; the file is incomplete or was changed after the checkpoint");
    FileDigest d = digest_file(path);
    if (d.fnv1a64 != rec["fnv1a64"].get<std::string>())
      throw CheckpointRefused(path + ": its content differs from the digest " + index +
                              " recorded; the file was changed after the checkpoint");
  }
  return out;
}

}  // namespace pw

#include "core/spec/bounded_json.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "core/spec/spec_error.h"

namespace pw {
namespace {

using json = nlohmann::json;

// Builds the DOM with nlohmann's own SAX builder while tracking where it
// is, so that a parse error and a depth overflow name the JSON path.
class PathTrackingSax {
 public:
  PathTrackingSax(json& out, std::string root, int max_depth)
      : dom_(out, true), root_(std::move(root)), max_depth_(max_depth) {}

  bool null() { return value(dom_.null()); }
  bool boolean(bool v) { return value(dom_.boolean(v)); }
  bool number_integer(json::number_integer_t v) { return value(dom_.number_integer(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(dom_.number_unsigned(v)); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return value(dom_.number_float(v, s)); }
  bool string(json::string_t& v) { return value(dom_.string(v)); }
  bool binary(json::binary_t& v) { return value(dom_.binary(v)); }
  bool key(json::string_t& k) {
    frames_.back().key = k;
    return dom_.key(k);
  }
  bool start_object(std::size_t n) { return open(true) && dom_.start_object(n); }
  bool end_object() { return close() && dom_.end_object(); }
  bool start_array(std::size_t n) { return open(false) && dom_.start_array(n); }
  bool end_array() { return close() && dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& ex) {
    // The token is never echoed but for a number: it may hold the bytes that
    // are not UTF-8, which no message repeats.
    std::string reason = ex.id == 406 ? "number out of range (beyond double): " + token.substr(0, 40)
                         : std::string(ex.what()).find("UTF-8") != std::string::npos
                             ? "not valid UTF-8 at byte " + std::to_string(position) + " (every text of a job is UTF-8)"
                             : "not valid JSON at byte " + std::to_string(position);
    throw SpecError(path(), reason);
  }

 private:
  struct Frame {
    bool object;
    std::string key;
    std::size_t index = 0;
  };
  bool value(bool ok) {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return ok;
  }
  bool open(bool object) {
    if (static_cast<int>(frames_.size()) >= max_depth_)
      throw SpecError(path(), "nested deeper than " + std::to_string(max_depth_) + " levels");
    frames_.push_back({object, {}, 0});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value(true);
  }
  // The path of the value being read: the last key of each open object,
  // the current index of each open array.
  std::string path() const {
    std::string p = root_;
    for (const auto& f : frames_) {
      if (f.object) {
        if (f.key.empty()) continue;
        p += (p.empty() ? "" : ".") + f.key.substr(0, 80);
      } else {
        p += "[" + std::to_string(f.index) + "]";
      }
    }
    return p.empty() ? "$" : p;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::string root_;
  int max_depth_;
  std::vector<Frame> frames_;
};

}  // namespace

json parse_bounded_json(const std::string& text, const std::string& root, int max_depth) {
  json out;
  PathTrackingSax sax(out, root, max_depth);
  json::sax_parse(text, &sax);
  return out;
}

std::string read_bounded_file(const std::string& file, std::size_t max_bytes, const std::string& what) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw SpecError("$", "cannot open " + what + " \"" + file + "\"");
  if (!S_ISREG(st.st_mode)) throw SpecError("$", what + " \"" + file + "\" is not a regular file");
  if (static_cast<std::size_t>(st.st_size) > max_bytes)
    throw SpecError("$", what + " \"" + file + "\" is " + std::to_string(st.st_size) + " bytes, over the bound of " +
                             std::to_string(max_bytes >> 20) + " MiB");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SpecError("$", "cannot open " + what + " \"" + file + "\"");
  // One byte past the size stat gave tells a file that grew meanwhile.
  std::string text(static_cast<std::size_t>(st.st_size) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > static_cast<std::size_t>(st.st_size))
    throw SpecError("$", what + " \"" + file + "\" changed while it was read");
  return text;
}

}  // namespace pw

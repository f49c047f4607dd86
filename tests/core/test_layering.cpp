// No arrow back up inside pw_core (issue 42): every #include "core/..." of
// engine/core points to its own layer or a lower one of engine/core/
// layers.txt, the one statement of the order, and docs/ARCHITECTURE.md's
// table of the layers says the same. Reads the sources, so an include that
// points up fails here naming the file, the include and both layers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Layer {
  std::string name;
  std::vector<std::string> holds;  // "events/" (a folder) or "spec/spec_error" (a file stem)
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// layers.txt: one layer per line, lowest first, '#' starts a comment.
std::vector<Layer> parse_layers(const std::string& text) {
  std::vector<Layer> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line.substr(0, line.find('#')));
    Layer l;
    if (!(words >> l.name)) continue;
    for (std::string w; words >> w;) l.holds.push_back(w);
    out.push_back(std::move(l));
  }
  return out;
}

// The layer a path under engine/core belongs to: the longest entry that
// holds it (a folder holds what is under it, a stem its .h and .cpp).
std::optional<size_t> layer_of(const std::vector<Layer>& layers, const std::string& rel) {
  const std::string stem = fs::path(rel).replace_extension().string();
  std::optional<size_t> best;
  size_t best_len = 0;
  for (size_t i = 0; i < layers.size(); ++i)
    for (const auto& h : layers[i].holds) {
      const bool folder = !h.empty() && h.back() == '/';
      const bool holds = folder ? rel.compare(0, h.size(), h) == 0 : stem == h;
      if (holds && h.size() > best_len) best = i, best_len = h.size();
    }
  return best;
}

// Every problem with `sources` (path under engine/core -> its text): a file
// in no layer, an include of a file in no layer or in a higher layer.
std::vector<std::string> violations(const std::vector<Layer>& layers, const std::map<std::string, std::string>& sources) {
  static const std::regex include(R"(#include\s+"core/([^"]+)\")");
  std::vector<std::string> out;
  for (const auto& [rel, text] : sources) {
    const auto me = layer_of(layers, rel);
    if (!me) {
      out.push_back(rel + ": in no layer of engine/core/layers.txt");
      continue;
    }
    for (std::sregex_iterator m(text.begin(), text.end(), include), end; m != end; ++m) {
      const std::string target = (*m)[1];
      const auto to = layer_of(layers, target);
      if (!to)
        out.push_back(rel + " (" + layers[*me].name + ") includes core/" + target + ", which is in no layer");
      else if (*to > *me)
        out.push_back(rel + " (" + layers[*me].name + ") includes core/" + target + " (" + layers[*to].name +
                      ", above it): an arrow back up");
    }
  }
  return out;
}

const fs::path kSource = PW_SOURCE_DIR;

std::vector<Layer> declared() { return parse_layers(read(kSource / "engine/core/layers.txt")); }

TEST(Layering, NoIncludeInsideCorePointsUpTheDeclaredOrder) {
  const auto layers = declared();
  ASSERT_GT(layers.size(), 10u);
  std::map<std::string, std::string> sources;
  for (const auto& e : fs::recursive_directory_iterator(kSource / "engine/core")) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".h" || ext == ".cpp"))
      sources[fs::relative(e.path(), kSource / "engine/core").generic_string()] = read(e.path());
  }
  ASSERT_GT(sources.size(), 100u);
  std::string all;
  for (const auto& v : violations(layers, sources)) all += "  " + v + "\n";
  EXPECT_TRUE(all.empty()) << "engine/core's includes against engine/core/layers.txt:\n" << all;
}

// The check itself: an arrow up, a file outside every layer and an include
// of one are each named; a stem entry beats its folder's.
TEST(Layering, TheCheckNamesAnArrowUpAndAFileInNoLayer) {
  const auto layers = parse_layers("# lowest first\nbase  spec/spec_error\nlow  low/\nspec spec/ # the rest\nhigh high/\n");
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layer_of(layers, "spec/spec_error.h"), 0u);
  EXPECT_EQ(layer_of(layers, "spec/job_spec.h"), 2u);
  EXPECT_EQ(layer_of(layers, "other/x.h"), std::nullopt);
  const std::map<std::string, std::string> ok = {
      {"low/a.h", "#include \"core/spec/spec_error.h\"\n#include \"core/low/b.h\""},
      {"high/c.cpp", "#include \"core/low/a.h\"\n#include \"core/spec/job_spec.h\""}};
  EXPECT_TRUE(violations(layers, ok).empty());
  const auto bad = violations(layers, {{"low/a.h", "#include \"core/high/c.h\""},
                                       {"spec/spec_error.h", "#include \"core/spec/job_spec.h\""},
                                       {"stray/d.h", ""},
                                       {"high/e.h", "#include \"core/stray/d.h\""}});
  ASSERT_EQ(bad.size(), 4u);
  EXPECT_EQ(bad[0], "high/e.h (high) includes core/stray/d.h, which is in no layer");
  EXPECT_EQ(bad[1], "low/a.h (low) includes core/high/c.h (high, above it): an arrow back up");
  EXPECT_EQ(bad[2], "spec/spec_error.h (base) includes core/spec/job_spec.h (spec, above it): an arrow back up");
  EXPECT_EQ(bad[3], "stray/d.h: in no layer of engine/core/layers.txt");
}

// docs/ARCHITECTURE.md prints the table: its rows ("| `name` | `holds` ... |"
// under "Layers inside pw_core") name the same layers, in the same order,
// holding the same entries.
TEST(Layering, ArchitectureMdPrintsTheSameTable) {
  const std::string doc = read(kSource / "docs/ARCHITECTURE.md");
  const auto at = doc.find("### Layers inside pw_core");
  ASSERT_NE(at, std::string::npos) << "docs/ARCHITECTURE.md has no \"### Layers inside pw_core\" section";
  std::istringstream lines(doc.substr(at));
  std::vector<Layer> printed;
  static const std::regex row(R"(^\| `([a-z-]+)` \| ([^|]*)\|)"), code("`([^`]+)`");
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line.rfind("## ", 0) != 0 && line.rfind("### ", 0) != 0) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    Layer l{m[1], {}};
    const std::string holds = m[2];
    for (std::sregex_iterator c(holds.begin(), holds.end(), code), end; c != end; ++c) l.holds.push_back((*c)[1]);
    printed.push_back(std::move(l));
  }
  const auto layers = declared();
  ASSERT_EQ(printed.size(), layers.size()) << "layers in ARCHITECTURE.md's table vs engine/core/layers.txt";
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(printed[i].name, layers[i].name) << "row " << i;
    EXPECT_EQ(printed[i].holds, layers[i].holds) << layers[i].name;
  }
}

}  // namespace

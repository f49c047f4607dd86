#include "core/nas/subnet.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pw::nas {
namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

Subnet uniform_subnet(const SearchSpace& space, std::uint64_t seed, std::int64_t id) {
  std::uint64_t state = seed * 0x2545F4914F6CDD1Dull ^ static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ull;
  splitmix64(state);
  Subnet s(space.layers.size());
  for (size_t l = 0; l < s.size(); ++l) {
    // Multiply-shift maps 64 random bits to [0, n): exact and portable,
    // unlike std::uniform_int_distribution whose algorithm is unspecified.
    auto n = static_cast<unsigned __int128>(space.layers[l].choices());
    s[l] = static_cast<int>((static_cast<unsigned __int128>(splitmix64(state)) * n) >> 64);
  }
  return s;
}

std::vector<Subnet> load_subnet_list(const std::string& file, const SearchSpace& space) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read subnet list \"" + file + "\"");
  std::stringstream text;
  text << in.rdbuf();
  return parse_subnet_list(text.str(), file, space);
}

std::vector<Subnet> parse_subnet_list(const std::string& text, const std::string& file, const SearchSpace& space) {
  std::istringstream in(text);
  std::vector<Subnet> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    for (char& c : line)
      if (c == ',') c = ' ';
    std::istringstream is(line);
    Subnet s;
    std::string tok;
    while (is >> tok) {
      size_t used = 0;
      long v = -1;
      try {
        v = std::stol(tok, &used);
      } catch (...) {
        used = 0;
      }
      if (used != tok.size())
        throw std::runtime_error(file + ":" + std::to_string(n) + ": \"" + tok + "\" is not a choice index");
      size_t l = s.size();
      if (l < space.layers.size() && (v < 0 || v >= space.layers[l].choices()))
        throw std::runtime_error(file + ":" + std::to_string(n) + ": layer " + std::to_string(l) + " (" +
                                 space.layers[l].name + ") has " + std::to_string(space.layers[l].choices()) +
                                 " choices, got index " + std::to_string(v));
      s.push_back(static_cast<int>(v));
    }
    if (s.empty()) continue;
    if (s.size() != space.layers.size())
      throw std::runtime_error(file + ":" + std::to_string(n) + ": expected " + std::to_string(space.layers.size()) +
                               " choice indices (one per choice layer), got " + std::to_string(s.size()));
    out.push_back(std::move(s));
  }
  if (out.empty()) throw std::runtime_error(file + ": no subnets in the list");
  return out;
}

std::vector<Subnet> subnet_sequence(const SearchSpace& space, std::uint64_t seed, int count) {
  std::vector<Subnet> out;
  out.reserve(count);
  if (space.sampler == "list") {
    auto list = load_subnet_list(space.subnet_file, space);
    for (int i = 0; i < count; ++i) out.push_back(list[i % list.size()]);
  } else {
    for (int i = 0; i < count; ++i) out.push_back(uniform_subnet(space, seed, i));
  }
  return out;
}

std::string to_string(const Subnet& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? " " : "") + std::to_string(s[i]);
  return out;
}

}  // namespace pw::nas

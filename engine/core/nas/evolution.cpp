#include "core/nas/evolution.h"

#include <algorithm>
#include <map>
#include <optional>

#include "core/spec/json_fields.h"
#include "core/spec/spec_error.h"

namespace pw::nas {
namespace {

// splitmix64: portable, so the search is the same everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : x_(seed ^ 0x6A09E667F3BCC909ull) {}
  std::uint64_t next() {
    std::uint64_t z = (x_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>((static_cast<unsigned __int128>(next()) * static_cast<unsigned>(n)) >> 64); }
  double unit() { return (next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  std::uint64_t x_;
};

// Scores each distinct subnet once and keeps the budget.
class Evaluator {
 public:
  Evaluator(const SubnetScorer& score, int budget, SearchResult& out) : score_(score), budget_(budget), out_(out) {}
  bool exhausted() const { return out_.evaluations >= budget_; }
  // Score of s, evaluating it if new; nullopt when new and out of budget.
  std::optional<double> operator()(const Subnet& s) {
    if (auto it = cache_.find(s); it != cache_.end()) return it->second;
    if (exhausted()) return std::nullopt;
    double v = score_(s);
    cache_[s] = v;
    ++out_.evaluations;
    out_.scored.emplace_back(s, v);
    if (out_.evaluations == 1 || v > out_.best_score) {
      out_.best = s;
      out_.best_score = v;
    }
    out_.best_after.push_back(out_.best_score);
    return v;
  }
  bool seen(const Subnet& s) const { return cache_.count(s) > 0; }

 private:
  const SubnetScorer& score_;
  int budget_;
  SearchResult& out_;
  std::map<Subnet, double> cache_;
};

struct Member {
  Subnet s;
  double score;
};
void rank(std::vector<Member>& pop) {
  // Ties broken by the subnet itself: deterministic whatever the sort.
  std::sort(pop.begin(), pop.end(), [](const Member& a, const Member& b) {
    return a.score != b.score ? a.score > b.score : a.s < b.s;
  });
}
}  // namespace

EvolutionConfig parse_evolution(const JobSpec& job) {
  EvolutionConfig c;
  c.seed = job.training.seed;
  if (job.search_space.is_null() || !job.search_space.contains("search")) return c;
  JsonFields f(job.search_space.at("search"), "search_space.search");
  c.population = f.integer<int>("population", 2, 1000000, c.population);
  c.parents = f.integer<int>("parents", 1, 1000000, c.parents);
  c.mutation = f.number("mutation", 0, 1, c.mutation);
  c.crossover = f.number("crossover", 0, 1, c.crossover);
  c.evaluations = f.integer<int>("evaluations", 1, 100000000, c.evaluations);
  c.seed = f.integer<std::uint64_t>("seed", 0, UINT64_MAX, c.seed);
  f.finish();
  if (c.parents > c.population) throw SpecError(f.path_of("parents"), "must be <= population");
  if (c.mutation > 1) throw SpecError(f.path_of("mutation"), "is a probability, got " + std::to_string(c.mutation));
  if (c.crossover > 1) throw SpecError(f.path_of("crossover"), "is a fraction, got " + std::to_string(c.crossover));
  return c;
}

SearchResult evolutionary_search(const SearchSpace& space, const EvolutionConfig& cfg, const SubnetScorer& score) {
  SearchResult out;
  Evaluator eval(score, cfg.evaluations, out);
  Rng rng(cfg.seed);
  std::vector<Member> pop;
  // Initial population: the uniform sampler's subnets from the search seed,
  // i.e. exactly random_search's first ones with that seed (a fair start).
  for (std::int64_t i = 0; static_cast<int>(pop.size()) < cfg.population && !eval.exhausted() && i < 64LL * cfg.population; ++i) {
    Subnet s = uniform_subnet(space, cfg.seed, i);
    if (eval.seen(s)) continue;
    pop.push_back({s, *eval(s)});
  }
  int stale = 0;  // generations that produced nothing new (tiny spaces)
  while (!eval.exhausted() && !pop.empty() && stale < 8) {
    rank(pop);
    int k = std::min<int>(cfg.parents, static_cast<int>(pop.size()));
    std::vector<Member> children;
    int tries = 0;
    while (static_cast<int>(children.size()) < cfg.population && !eval.exhausted() && tries++ < 16 * cfg.population) {
      Subnet child = pop[rng.below(k)].s;
      if (k > 1 && rng.unit() < cfg.crossover) {
        const Subnet& other = pop[rng.below(k)].s;
        for (size_t l = 0; l < child.size(); ++l)
          if (rng.next() & 1) child[l] = other[l];
      }
      for (size_t l = 0; l < child.size(); ++l)
        if (rng.unit() < cfg.mutation) child[l] = rng.below(space.layers[l].choices());
      if (eval.seen(child)) continue;
      children.push_back({child, *eval(child)});
    }
    stale = children.empty() ? stale + 1 : 0;
    pop.insert(pop.end(), children.begin(), children.end());
    rank(pop);
    if (static_cast<int>(pop.size()) > cfg.population) pop.resize(cfg.population);
  }
  return out;
}

SearchResult random_search(const SearchSpace& space, int evaluations, std::uint64_t seed, const SubnetScorer& score) {
  SearchResult out;
  Evaluator eval(score, evaluations, out);
  for (std::int64_t i = 0; !eval.exhausted() && i < 64LL * evaluations; ++i) eval(uniform_subnet(space, seed, i));
  return out;
}

}  // namespace pw::nas

#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/nas/search_space.h"
#include "core/nas/subnet.h"

namespace pw::nas {

// search_space.search: the evolutionary search run over a trained supernet
// (NASPipe / SPOS style): a population of subnets scored on validation
// data; each generation keeps the best `parents`, breeds children by
// crossover (each layer from one of two parents) and mutation (each layer
// resampled with probability `mutation`), and keeps the best `population`.
struct EvolutionConfig {
  int population = 16;
  int parents = 4;
  double mutation = 0.1;
  double crossover = 0.5;  // fraction of children bred by crossover (then mutated)
  int evaluations = 128;   // budget of distinct subnets scored
  std::uint64_t seed = 1;
};
// Reads search_space.search (absent: defaults, seed = training.seed);
// throws SpecError naming the field.
EvolutionConfig parse_evolution(const JobSpec& job);

// Higher is better (validation accuracy). Called once per distinct subnet,
// in a deterministic order.
using SubnetScorer = std::function<double(const Subnet&)>;

struct SearchResult {
  Subnet best;
  double best_score = 0;
  int evaluations = 0;                    // distinct subnets scored
  std::vector<double> best_after;         // best score after each evaluation
  std::vector<std::pair<Subnet, double>> scored;  // in evaluation order
};

// Deterministic from cfg.seed: the same space, config and scorer give the
// same result on every platform.
SearchResult evolutionary_search(const SearchSpace& space, const EvolutionConfig& cfg, const SubnetScorer& score);

// The baseline with the same budget: `evaluations` uniform subnets (the
// training sampler's, from `seed`), best of them. With the search's seed its
// first `population` subnets are the evolution's initial population.
SearchResult random_search(const SearchSpace& space, int evaluations, std::uint64_t seed, const SubnetScorer& score);

}  // namespace pw::nas

#pragma once
#include <string>
#include <vector>

#include "core/nas/evolution.h"

namespace pw::rt::nas {

struct SupernetSearch {
  pw::nas::SearchResult evolution;  // search_space.search over the trained supernet
  pw::nas::SearchResult random;     // the same number of uniform subnets, for comparison
  int validation_samples = 0;
};

// After a CSP run wrote its stages' candidates (stage<r>.bin, stage<r>.json)
// to `run_dir`: rebuilds the whole trained supernet in this process and runs
// the evolutionary search, each subnet scored by its accuracy on the job's
// held-out split (data.test_samples of the Fashion-MNIST test set), then
// random search with the same number of evaluations. Deterministic from
// search_space.search.seed. Throws naming the missing or mismatched file.
SupernetSearch search_trained_supernet(const std::string& job_file, const std::vector<std::string>& overrides,
                                       const std::string& run_dir);

}  // namespace pw::rt::nas

#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/nas/evolution.h"
#include "core/nas/nas_job.h"
#include "runtime/data.h"
#include "runtime/nas/supernet_modules.h"

namespace pw::rt::nas {

struct SupernetSearch {
  pw::nas::SearchResult evolution;  // search_space.search over the trained supernet
  pw::nas::SearchResult random;     // the same number of uniform subnets, for comparison
  int validation_samples = 0;
};

// After a CSP run wrote its stages' candidates (stage<r>.bin, stage<r>.json)
// to `run_dir`: the whole trained supernet, rebuilt in this process. Throws
// naming the missing or mismatched file.
CnnSupernet load_trained_supernet(const pw::nas::NasJob& nj, const std::string& run_dir);

// The share of `val` the subnet classifies right (batches of 500, one
// intra-op thread: the figure the search stores and an export reproduces).
double subnet_accuracy(const CnnSupernet& net, const pw::nas::Subnet& s, const Dataset& val);

// Parameter elements of the subnet on its own: stem, chosen candidates, head.
std::int64_t subnet_parameters(const CnnSupernet& net, const pw::nas::Subnet& s);

// Rebuilds the trained supernet (load_trained_supernet) and runs the
// evolutionary search, each subnet scored by its accuracy on the job's
// held-out split (data.test_samples of the Fashion-MNIST test set), then
// random search with the same number of evaluations. Deterministic from
// search_space.search.seed.
SupernetSearch search_trained_supernet(const std::string& job_file, const std::vector<std::string>& overrides,
                                       const std::string& run_dir);

}  // namespace pw::rt::nas

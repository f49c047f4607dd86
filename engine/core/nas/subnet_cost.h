#pragma once
#include "core/nas/search_space.h"
#include "core/nas/subnet.h"

namespace pw::nas {

// The predicted inference latency of one subnet: the forward time of one
// microbatch (training.microbatch_size) through the frozen stem, the chosen
// candidates and the head, on one device of the job (cluster.device), from
// the same candidate costs the supernet simulator schedules (search_space.h).
// No transfers: the deployed subnet runs on one device.
// Throws std::invalid_argument for a subnet that does not fit the space.
double subnet_latency_ms(const SearchSpace& space, const Subnet& subnet);

}  // namespace pw::nas

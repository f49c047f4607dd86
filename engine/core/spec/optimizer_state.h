#pragma once
#include <string>

namespace pw {

// Tensors the optimizer (training.optimizer) keeps per parameter tensor,
// each the parameter's size: Adam's two moments, momentum's velocity, none
// for plain SGD. The engine's memory meter, a measured profile's
// optimizer_bytes and the supernet candidates' state all count with it.
inline int optimizer_states_per_param(const std::string& optimizer) {
  return optimizer == "adam" ? 2 : optimizer == "momentum" ? 1 : 0;
}

}  // namespace pw

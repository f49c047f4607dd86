#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/nas/csp_policy.h"

namespace pw::nas {

// How a pipeline trains a sequence of subnets.
enum class SupernetMode {
  Csp,         // NASPipe: many subnets in flight, CSP ordering, predictive prefetch
  Sequential,  // one subnet at a time (CSP with a window of 1), prefetch of the next
  GPipe,       // one subnet per flush, its batch in microbatches fill-drain, layers loaded on demand
  PipeDream,   // async 1F1B across subnets, no CSP (not reproducible), layers loaded on demand
  VPipe,       // one subnet per flush, 1F1B microbatches, next subnet's layers prefetched
};
const char* to_string(SupernetMode m);
std::optional<SupernetMode> supernet_mode_from_string(const std::string& s);
std::vector<std::string> supernet_mode_names();

// A unit of pipeline work: subnet, and microbatch within it (flush modes).
struct Unit {
  int subnet = 0;
  int micro = 0;
};
struct Work {
  bool backward = false;
  Unit unit;
};

// Decides each stage's next action for one mode; the simulator moves
// time, data and memory. The CSP driver is a thin adapter over CspStage.
class SupernetDriver {
 public:
  virtual ~SupernetDriver() = default;
  virtual std::optional<Work> next(int stage, std::vector<SubnetWait>* waits) = 0;
  virtual void started(int stage, const Work& w) = 0;
  virtual void forward_arrived(int stage, Unit u) = 0;   // stages > 0
  virtual void backward_arrived(int stage, Unit u) = 0;  // last stage: after its forward
  // True when this subnet's update at `stage` follows the backward now.
  virtual bool backward_finished(int stage, Unit u) = 0;
  virtual void update_finished(int stage, int subnet) = 0;
  // Subnets the stage expects to run next (what to prefetch); empty when
  // the mode loads on demand.
  virtual std::vector<int> predict(int stage, int k) const = 0;
  virtual int micro_per_subnet() const = 0;  // units a subnet's batch is split into
  virtual bool reproducible() const = 0;
  virtual bool all_done() const = 0;
  virtual std::string describe_stuck() const = 0;  // for deadlock reports
};

std::unique_ptr<SupernetDriver> make_driver(SupernetMode mode, const std::vector<StageSlots>& stages,
                                            const std::vector<Subnet>* sequence, int window, int microbatches);

}  // namespace pw::nas

#pragma once
#include <string>

#include "core/spec/job_spec.h"
#include "gui/models/run_source.h"

namespace pw::gui {

struct SimulatedRunOptions {
  std::string planner;  // empty: the job's pipeline.planner
  int iterations = 10;
  // Simulated seconds per wall second; 0 publishes as fast as possible
  // (opening a "recorded" run), > 0 paces it like a live engine.
  double speed = 0;
  std::size_t batch_events = 1 << 16;
};

// A run produced by the simulator instead of the engine: the job is
// planned and one iteration simulated (pw_core), then repeated back to
// back for the requested iterations. Used by "Simulate this job", by the
// tests and by the benchmarks.
class SimulatedRunSource final : public RunSource {
  Q_OBJECT
 public:
  SimulatedRunSource(JobSpec job, SimulatedRunOptions options, QObject* parent = nullptr);
  ~SimulatedRunSource() override;
  QString description() const override;

 protected:
  void run() override;

 private:
  JobSpec job_;
  SimulatedRunOptions opt_;
};

// The whole simulated run in one batch, synchronously (tests, benchmarks).
RunBatch simulate_run(const JobSpec& job, const SimulatedRunOptions& options);

}  // namespace pw::gui

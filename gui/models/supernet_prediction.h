#pragma once
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/spec/job_spec.h"
#include "gui/models/nas_core.h"

namespace pw::gui {

// A supernet job (one with a search_space) under one way of training its
// subnets (pw::nas::SupernetMode), on the supernet simulator.
struct SupernetOutcome {
  std::string mode;
  bool ok = false;
  std::string error;
  nas::SupernetSimResult result;
};

// What the designer shows for a supernet job: the planners do not plan
// one, so it is the job's own mode (pipeline.schedule) first, then every
// other mode as a baseline, on the same space, subnet sequence and
// partition (prepare_nas_job).
struct SupernetPrediction {
  std::string error;  // prepare_nas_job refused the job
  std::string space;  // evolved-transformer | fmnist-cnn | uniform | custom
  int choice_layers = 0, max_choices = 0;
  double log10_subnets = 0;
  double budget_bytes = 0;  // per stage, for candidates
  std::vector<nas::StageSlots> stages;  // choice layers per stage (prepare_nas_job's partition)
  std::vector<std::string> layer_names;  // the choice layers
  std::vector<SupernetOutcome> outcomes;
  // The job's mode's events (the first kMaxEvents), for the timeline.
  std::vector<Event> events;
  static constexpr std::size_t kMaxEvents = 200000;
};

// Pure and thread-safe, like predict().
SupernetPrediction predict_supernet(const JobSpec& job);

}  // namespace pw::gui

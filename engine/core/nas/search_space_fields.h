#pragma once
#include <string_view>
#include <vector>

namespace pw::nas {

// Where a search-space field lives in the job document.
enum class SpaceScope {
  Space,      // search_space.<key>
  Layer,      // search_space.layers[i].<key>
  Candidate,  // search_space.layers[i].candidates[j].<key> (and, for the uniform builtin, search_space.<key>)
};

// A search-space field as data, as job_fields.h does for the rest of the
// job: parse_search_space reads each with its row's range, the studio's
// search-space designer builds its editors from the same rows, and the
// resume check (job/resume_check.cpp) asks `resume_may_change`, so none of
// the three keeps a list of its own that can drift.
struct SpaceField {
  std::string_view key;  // "window"
  SpaceScope scope = SpaceScope::Space;
  bool ranged = true;    // false: not a number (names, lists, objects)
  double min = 0, max = 0;
  bool integer = true;
  // A resume may change it: it only orders the work (window: CSP gives the
  // sequential result for any) or runs after training (search). Every other
  // field makes the supernet (its candidates, subnets, partition).
  bool resume_may_change = false;
};

// Every row, search_space's own fields first in the job file's order.
const std::vector<SpaceField>& search_space_fields();
// The row of `key` in `scope`; throws std::out_of_range naming it when there is none.
const SpaceField& search_space_field(std::string_view key, SpaceScope scope = SpaceScope::Space);

}  // namespace pw::nas

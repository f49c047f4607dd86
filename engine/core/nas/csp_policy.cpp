#include "core/nas/csp_policy.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pw::nas {

CspStage::CspStage(int stage, int stages, StageSlots slots, const std::vector<Subnet>* sequence, int window)
    : stage_(stage), stages_(stages), slots_(slots), seq_(sequence), window_(window) {
  if (window < 1) throw std::invalid_argument("CSP window must be >= 1, got " + std::to_string(window));
  if (!sequence) throw std::invalid_argument("CSP needs the subnet sequence");
  for (const auto& s : *sequence)
    if (slots.last >= static_cast<int>(s.size()))
      throw std::invalid_argument("stage " + std::to_string(stage) + " holds choice layer " +
                                  std::to_string(slots.last) + " but subnets have " + std::to_string(s.size()));
}

void CspStage::start_at(int k) {
  if (k < 0 || k > total())
    throw std::invalid_argument("CSP resume point " + std::to_string(k) + " is outside the " + std::to_string(total()) +
                                " subnets");
  if (low_ != 0 || finished_total_ != 0) throw std::logic_error("CspStage::start_at after the stage started");
  low_ = k;
  finished_total_ = k;
}

void CspStage::forward_ready(int b) {
  if (stage_ > 0) fwd_ready_.insert(b);
}

void CspStage::forward_started(int b) {
  fwd_ready_.erase(b);
  fwd_started_.insert(b);
}

void CspStage::backward_ready(int b) { bwd_ready_.insert(b); }

void CspStage::backward_started(int b) { bwd_ready_.erase(b); }

void CspStage::backward_done(int b) {
  if (finished(b)) return;
  finished_.insert(b);
  fwd_started_.erase(b);
  ++finished_total_;
  while (finished_.count(low_)) finished_.erase(low_++);
}

bool CspStage::conflicts(int w, int b, int* layer) const {
  const Subnet& sw = (*seq_)[w];
  const Subnet& sb = (*seq_)[b];
  for (int l = slots_.first; l <= slots_.last; ++l)
    if (sw[l] == sb[l]) {
      if (layer) *layer = l;
      return true;
    }
  return false;
}

std::optional<SubnetWait> CspStage::blocker(int b) const {
  for (int w = low_; w < b; ++w) {
    int layer = -1;
    if (!finished(w) && conflicts(w, b, &layer)) return SubnetWait{b, w, stage_, layer, 0};
  }
  return std::nullopt;
}

bool CspStage::forward_candidate(int b) const {
  if (finished(b) || fwd_started_.count(b)) return false;
  if (stage_ > 0) return fwd_ready_.count(b) > 0;
  return b < total() && b < low_ + window_ && b < hold_;
}

std::optional<CspAction> CspStage::next(std::vector<SubnetWait>* waits) const {
  std::optional<CspAction> backward;
  if (!bwd_ready_.empty()) backward = CspAction{CspActionKind::Backward, *bwd_ready_.begin()};
  // A ready backward goes first, but the forwards it holds back may also be
  // blocked by CSP: they are still scanned when waits are asked for, so a
  // wait is reported when it begins, not when the backward is over.
  if (backward && !waits) return backward;
  auto forward = next_forward(waits);
  return backward ? backward : forward;
}

std::optional<CspAction> CspStage::next_forward(std::vector<SubnetWait>* waits) const {
  auto consider = [&](int b) -> bool {
    auto why = blocker(b);
    if (!why) return true;
    if (waits) waits->push_back(*why);
    return false;
  };
  if (stage_ == 0) {
    int end = std::min({total(), low_ + window_, hold_});
    for (int b = low_; b < end; ++b)
      if (forward_candidate(b) && consider(b)) return CspAction{CspActionKind::Forward, b};
  } else {
    for (int b : fwd_ready_)
      if (consider(b)) return CspAction{CspActionKind::Forward, b};
  }
  return std::nullopt;
}

std::vector<int> CspStage::predicted_forwards(int k) const {
  // Eligible ready ones first (they run next), then everything not yet
  // started in sequence order up to the window.
  std::vector<int> out;
  std::vector<int> later;
  int end = std::min(total(), low_ + window_ + stages_);
  for (int b = low_; b < end && static_cast<int>(out.size() + later.size()) < 4 * k; ++b) {
    if (finished(b) || fwd_started_.count(b)) continue;
    bool ready = stage_ == 0 ? b < low_ + window_ && b < hold_ : fwd_ready_.count(b) > 0;
    (ready && !blocker(b) ? out : later).push_back(b);
  }
  out.insert(out.end(), later.begin(), later.end());
  if (static_cast<int>(out.size()) > k) out.resize(k);
  return out;
}

}  // namespace pw::nas

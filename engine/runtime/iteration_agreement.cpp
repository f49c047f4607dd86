#include "runtime/iteration_agreement.h"
#include "runtime/store_bytes.h"

namespace pw::rt {

std::int64_t read_counter(c10d::Store& store, const std::string& key) {
  if (!store.check({key})) return 0;
  return std::stoll(from_bytes(store.get(key)));
}

IterationAgreement::IterationAgreement(c10::intrusive_ptr<c10d::Store> store, std::string counter_key)
    : store_(std::move(store)), key_(std::move(counter_key)) {}

bool IterationAgreement::pending() const { return due_ >= 0 || read_counter(*store_, key_) > handled_; }

bool IterationAgreement::due_after(std::int64_t it, bool here) {
  if (due_ < 0) {
    if (read_counter(*store_, key_) <= handled_) return false;
    std::string proposal = std::to_string(here ? it + 1 : it + 2);
    auto agreed = store_->compareSet(key_ + "/at/" + std::to_string(handled_ + 1), {}, to_bytes(proposal));
    due_ = std::stoll(from_bytes(agreed));
  }
  if (it + 1 < due_) return false;
  ++handled_;
  due_ = -1;
  return true;
}

}  // namespace pw::rt

#pragma once
#include <QAbstractTableModel>

namespace pw::gui {

// What the designer's side-by-side tables share: one row per outcome of a
// prediction (P::outcomes: a planner's, or a supernet mode's) and
// Self::ColumnCount columns; the figures are each subclass's own data().
template <class Self, class P>
class OutcomeTableModel : public QAbstractTableModel {
 public:
  using QAbstractTableModel::QAbstractTableModel;

  void setPrediction(P p) {
    beginResetModel();
    p_ = std::move(p);
    endResetModel();
  }
  const P& prediction() const { return p_; }

  int rowCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() ? 0 : static_cast<int>(p_.outcomes.size());
  }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : Self::ColumnCount; }

 protected:
  // The outcome a cell shows, or null for an index outside the table.
  const auto* outcomeAt(const QModelIndex& i) const {
    const bool in = i.isValid() && i.row() < rowCount() && i.column() < Self::ColumnCount;
    return in ? &p_.outcomes[static_cast<std::size_t>(i.row())] : nullptr;
  }

  P p_;
};

}  // namespace pw::gui

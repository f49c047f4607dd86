#pragma once
#include <QComboBox>

#include "gui/models/run_batch.h"

namespace pw::gui {

// Which data-parallel replica's pipeline the Monitor shows (docs/studio.md,
// "Replicas"): one item per replica the recording holds, the shown one
// current. A run of one pipeline hides it; a simulated run of several
// (the simulator records replica 0, the others run alike) shows it with
// that one item and says so in its tooltip.
class ReplicaSelector : public QComboBox {
  Q_OBJECT
 public:
  explicit ReplicaSelector(QWidget* parent = nullptr);
  // Rebuilds the items from the run's info when its replicas changed;
  // signals nothing.
  void showRun(const RunInfo& info);
  // Whether the run has replicas to show (the toolbar shows the selector then).
  bool relevant() const { return replicas_ > 1; }

 signals:
  // The user chose another replica.
  void replicaChosen(int replica);

 private:
  int replicas_ = 0, recorded_ = 0, shown_ = -1;
};

}  // namespace pw::gui

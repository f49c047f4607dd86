#include "gui/widgets/replica_selector.h"

#include <algorithm>

namespace pw::gui {

ReplicaSelector::ReplicaSelector(QWidget* parent) : QComboBox(parent) {
  setObjectName(QStringLiteral("replicaSelector"));
  setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(this, &QComboBox::activated, this, [this](int index) {
    const int r = itemData(index).toInt();
    if (r != shown_) emit replicaChosen(r);
  });
  showRun(RunInfo());
}

void ReplicaSelector::showRun(const RunInfo& info) {
  const int replicas = std::max(info.replicas, info.recorded_replicas), recorded = std::max(info.recorded_replicas, 1);
  if (replicas == replicas_ && recorded == recorded_ && info.replica == shown_) return;
  replicas_ = replicas;
  recorded_ = recorded;
  shown_ = info.replica;
  QSignalBlocker quiet(this);
  clear();
  for (int r = 0; r < recorded; ++r) addItem(tr("replica %1 of %2").arg(r).arg(replicas), r);
  setCurrentIndex(std::clamp(info.replica, 0, recorded - 1));
  setEnabled(recorded > 1);
  setToolTip(recorded < replicas
                 ? tr("%1 replicas of the pipeline trained; the recording holds replica 0's events (a simulation "
                      "runs one replica, the others run alike)")
                       .arg(replicas)
                 : tr("The data-parallel replica whose pipeline the Monitor shows (%1 recorded)").arg(recorded));
}

}  // namespace pw::gui

#pragma once
#include <QString>
#include <vector>

#include "core/model/layer_profile.h"
#include "gui/models/layer_table_model.h"

namespace pw::gui {

// What the designer learns about a TorchScript model from `pipewright
// profile` run as a child process (libtorch never loads inside the
// studio): its layers and their costs, or the user-facing reason it cannot
// be used (e.g. the child that breaks the chain).
struct ModelInspection {
  std::vector<LayerTableModel::Row> rows;
  ModelProfile profile;
  QString error;  // empty on success
};

}  // namespace pw::gui

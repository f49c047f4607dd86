#pragma once
#include <QList>
#include <QStringList>
#include <QWidget>
#include <nlohmann/json.hpp>
#include <optional>

#include "gui/models/job_model.h"
#include "gui/widgets/form_rows.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace pw::gui {

class JsonKeyEditor;
class SearchSpaceLayersModel;

// The designer's search-space editor: none (not a supernet job), a
// builtin space with its fields, or custom layers (a table of layers and
// their candidate ops), plus the settings every space takes (window,
// partition, device budget, sampler, shared). Every edit writes only the
// key it changed into the job's search_space, so fields this editor does
// not cover stay as the user wrote them; "Edit as JSON" shows the whole
// object as text instead. Names offered are the core parser's own
// (pw::nas::search_space_names).
class SearchSpaceEditor : public QWidget {
  Q_OBJECT
 public:
  explicit SearchSpaceEditor(JobModel* job, QWidget* parent = nullptr);

  void load();  // from the job's document (not while this editor writes it)
  // Puts every error under search_space at its field or table cell (the
  // rest of this editor's at its top) and returns the others.
  QList<JobModel::FieldError> showErrors(const QList<JobModel::FieldError>& errors);

  QString kind() const;  // "" (none), a builtin name, or "custom"
  QComboBox* kindEditor() const { return kind_; }
  QWidget* editorFor(const QString& path) const;  // "search_space.window"
  QLabel* errorLabelFor(const QString& path) const;  // also "search_space" (the kind) and "search_space.layers"
  QString generalError() const;
  SearchSpaceLayersModel* layers() const { return layers_; }
  QTableView* layerTable() const { return table_; }
  JsonKeyEditor* jsonEditor() const { return json_; }
  QPushButton* jsonToggle() const { return json_toggle_; }

 private:
  struct Field {
    QString key;  // in search_space
    form::Row row;
    QStringList kinds;  // empty: every space
    bool list = false;  // comma-separated integers
  };
  void addField(class QGridLayout* grid, const QString& key, const QString& label, QWidget* editor,
                const QStringList& kinds, const QString& tip = {}, bool list = false);
  void onFieldEdited(const Field& f);
  void onKindPicked();
  void writeSpace(const nlohmann::json& space);  // null: remove search_space
  void writeLayers();
  void updateVisibility();
  const Field* fieldFor(const QString& path) const;

  JobModel* job_;
  QComboBox* kind_;
  form::Row kind_row_;
  QList<Field> fields_;
  QWidget* structured_;
  QWidget* layers_box_;
  SearchSpaceLayersModel* layers_;
  QTableView* table_;
  QLabel* table_error_;
  QLabel* general_error_;
  QPushButton* json_toggle_;
  JsonKeyEditor* json_;
  std::optional<nlohmann::json> stash_;  // the space set aside by picking "none"
  bool writing_ = false;
  bool loading_ = false;
};

}  // namespace pw::gui

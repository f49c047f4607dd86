#pragma once
#include <QString>
#include <QStringList>
#include <QVariant>
#include <functional>
#include <string>
#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QObject;
class QSpinBox;
class QWidget;

namespace pw::gui::form {

// The editors of the designer's forms, and the one way to read, set and
// watch them, shared by the job form and the search-space editor.

// The minimum of a spin box with `unset` text means "not set" (the key is
// left out, so the parser's default applies).
QSpinBox* spin(int lo, int hi, const QString& unset = {});
QDoubleSpinBox* dspin(double lo, double hi, int decimals, const QString& unset = {});
// A 64-bit unsigned integer (a seed): digits only, the value a qulonglong
// (a QSpinBox stops at 2^31).
QLineEdit* uint64_edit();
QComboBox* combo(const QStringList& items);
QStringList qlist(const std::vector<std::string>& v);

// A caption and an editor with its (hidden) error label under it, as the
// next row of a two-column grid. A grid, never a QFormLayout: see
// DesignerWidget::buildForm.
struct Row {
  QWidget* editor = nullptr;
  QLabel* error = nullptr;
  QLabel* caption = nullptr;
  QWidget* row = nullptr;  // editor + error label
  void setVisible(bool on) const;
  void showError(const QString& message) const;  // empty: no error
};
Row add_row(QGridLayout* grid, const QString& path, const QString& label, QWidget* editor, const QString& tip = {},
            QWidget* extra = nullptr);

// The editor's value as JSON would hold it; invalid when not set. `list`:
// a line edit holding comma-separated integers.
QVariant value(const QWidget* editor, bool list = false);
void set_value(QWidget* editor, const QVariant& v);  // without emitting edits
// Calls `edited` whenever the user changes the editor.
void on_edited(QWidget* editor, QObject* context, const std::function<void()>& edited);

}  // namespace pw::gui::form

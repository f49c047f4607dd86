#include "gui/widgets/json_key_editor.h"

#include <QLabel>
#include <QScopedValueRollback>
#include <QSignalBlocker>

#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"
#include "gui/models/job_model.h"

namespace pw::gui {

JsonKeyEditor::JsonKeyEditor(JobModel* job, std::string key, QWidget* parent)
    : QPlainTextEdit(parent), job_(job), key_(std::move(key)), syntax_error_(new QLabel) {
  setObjectName(QString::fromStdString(key_));
  setFont(QFont(QStringLiteral("monospace")));
  syntax_error_->setObjectName(QStringLiteral("syntax:") + objectName());
  syntax_error_->setStyleSheet(QStringLiteral("color: #d9534f"));
  syntax_error_->setVisible(false);
  connect(this, &QPlainTextEdit::textChanged, this, &JsonKeyEditor::write);
  load();
}

void JsonKeyEditor::load() {
  if (writing_) return;
  QSignalBlocker block(this);
  auto it = job_->document().find(key_);
  const QString text = it == job_->document().end() ? QString() : QString::fromStdString(it->dump(indent_));
  if (text != toPlainText()) setPlainText(text);
  syntax_error_->setVisible(false);
}

void JsonKeyEditor::write() {
  const QString text = toPlainText().trimmed();
  auto doc = job_->document();
  if (text.isEmpty()) {
    doc.erase(key_);
  } else {
    // Bounded as a `--set` value is: the key takes a level of the document.
    nlohmann::json j;
    try {
      j = parse_bounded_json(text.toStdString(), key_, kMaxJsonDepth - 1);
    } catch (const SpecError& e) {
      syntax_error_->setText(e.reason().rfind("not valid JSON", 0) == 0 ? tr("not valid JSON yet")
                                                                         : QString::fromStdString(e.what()));
      syntax_error_->setVisible(true);
      return;
    }
    doc[key_] = std::move(j);
  }
  syntax_error_->setVisible(false);
  if (doc == job_->document()) return;
  QScopedValueRollback<bool> writing(writing_, true);
  job_->setDocument(doc);
}

}  // namespace pw::gui

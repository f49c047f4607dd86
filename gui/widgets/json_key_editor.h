#pragma once
#include <QPlainTextEdit>
#include <string>

class QLabel;

namespace pw::gui {

class JobModel;

// One top-level key of the job document (search_space, data) as JSON text:
// typing valid JSON writes it into the document (empty text removes the
// key), text that is not JSON yet says so under the editor and leaves the
// document as it was.
class JsonKeyEditor : public QPlainTextEdit {
  Q_OBJECT
 public:
  JsonKeyEditor(JobModel* job, std::string key, QWidget* parent = nullptr);
  QLabel* syntaxError() const { return syntax_error_; }
  void setIndent(int spaces) { indent_ = spaces; }  // -1: one line
  // Shows the document's value; not while this editor is writing it, so the
  // text (and the cursor) stays as the user typed it.
  void load();

 private:
  void write();

  JobModel* job_;
  std::string key_;
  QLabel* syntax_error_;
  int indent_ = -1;
  bool writing_ = false;
};

}  // namespace pw::gui

#pragma once
#include <QList>
#include <QObject>
#include <QString>
#include <QVariant>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/spec/job_spec.h"

namespace pw::gui {

// The job the designer edits: the JSON document as the user writes it
// (so saving keeps their layout and unknown sections), validated with
// pw_core's parse_job after every change. A validation error carries the
// JSON path of the field (pw::SpecError::path), which the designer uses
// to put the message next to that field.
class JobModel : public QObject {
  Q_OBJECT
 public:
  explicit JobModel(QObject* parent = nullptr);

  const nlohmann::json& document() const { return doc_; }
  void setDocument(const nlohmann::json& doc);

  // Dotted paths ("pipeline.stages"). An invalid QVariant removes the key.
  QVariant value(const QString& path) const;
  void setValue(const QString& path, const QVariant& value);
  // Keeps only `keys` in the object at `path` (e.g. after the model kind
  // changed, the fields the new kind does not take).
  void retainKeys(const QString& path, const QStringList& keys);

  bool load(const QString& file, QString* error);
  bool save(const QString& file, QString* error);
  QString fileName() const { return file_; }
  bool isModified() const { return modified_; }

  bool isValid() const { return spec_.has_value(); }
  const std::optional<JobSpec>& spec() const { return spec_; }
  QString errorPath() const { return error_path_; }  // the first error
  QString errorMessage() const { return error_; }
  // Every error found, by field path (first one included). pw_core's parser
  // stops at the first problem; the others are found by parsing again with
  // each reported field repaired (the default job's value, or the field
  // removed so the parser's default applies), so no validation rule is
  // restated here. Errors inside an object whose "kind" was itself wrong
  // are left out: they would be about the repaired kind, not the user's.
  struct FieldError {
    QString path, message;
  };
  const QList<FieldError>& errors() const { return errors_; }
  quint64 revision() const { return revision_; }

  static nlohmann::json defaultDocument();
  static nlohmann::json toJson(const QVariant& v);
  static QVariant fromJson(const nlohmann::json& j);

 signals:
  void changed();    // the document changed (validated already)
  void fileChanged();

 private:
  void validate();

  nlohmann::json doc_;
  std::optional<JobSpec> spec_;
  QString error_path_, error_;
  QList<FieldError> errors_;
  QString file_;
  bool modified_ = false;
  quint64 revision_ = 0;
};

}  // namespace pw::gui

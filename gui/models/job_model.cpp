#include "gui/models/job_model.h"

#include <QFile>
#include <QStringList>

#include "core/spec/spec_error.h"

namespace pw::gui {

JobModel::JobModel(QObject* parent) : QObject(parent) { setDocument(defaultDocument()); modified_ = false; }

nlohmann::json JobModel::defaultDocument() {
  return nlohmann::json::parse(R"({
    "name": "bert24-4gpu",
    "model": {"kind": "bert", "layers": 24, "hidden": 1024, "heads": 16, "seq_len": 128, "vocab": 30522},
    "data": {"kind": "synthetic"},
    "training": {"optimizer": "adam", "lr": 0.0001, "batch_size": 512, "microbatch_size": 64, "iterations": 100, "seed": 1},
    "cluster": {"devices": 4, "device": "rtx2080ti"},
    "pipeline": {"stages": 4, "schedule": "1f1b", "planner": "uniform"}
  })");
}

void JobModel::setDocument(const nlohmann::json& doc) {
  doc_ = doc;
  modified_ = true;
  validate();
}

void JobModel::validate() {
  ++revision_;
  try {
    spec_ = parse_job(doc_);
    error_path_.clear();
    error_.clear();
  } catch (const SpecError& e) {
    spec_.reset();
    error_path_ = QString::fromStdString(e.path());
    error_ = QString::fromStdString(e.reason());
  } catch (const std::exception& e) {
    spec_.reset();
    error_path_ = QStringLiteral("$");
    error_ = QString::fromUtf8(e.what());
  }
  emit changed();
}

nlohmann::json JobModel::toJson(const QVariant& v) {
  switch (v.typeId()) {
    case QMetaType::Bool: return v.toBool();
    case QMetaType::Int:
    case QMetaType::LongLong:
    case QMetaType::UInt:
    case QMetaType::ULongLong: return v.toLongLong();
    case QMetaType::Double:
    case QMetaType::Float: return v.toDouble();
    case QMetaType::QString: return v.toString().toStdString();
    case QMetaType::QVariantList: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& x : v.toList()) a.push_back(toJson(x));
      return a;
    }
    default: return v.toString().toStdString();
  }
}

QVariant JobModel::fromJson(const nlohmann::json& j) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return QVariant::fromValue<qlonglong>(j.get<long long>());
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) return QString::fromStdString(j.get<std::string>());
  if (j.is_array()) {
    QVariantList l;
    for (const auto& x : j) l.push_back(fromJson(x));
    return l;
  }
  if (j.is_null()) return {};
  return QString::fromStdString(j.dump());
}

QVariant JobModel::value(const QString& path) const {
  const nlohmann::json* node = &doc_;
  for (const auto& part : path.split('.')) {
    if (!node->is_object()) return {};
    auto it = node->find(part.toStdString());
    if (it == node->end()) return {};
    node = &*it;
  }
  return fromJson(*node);
}

void JobModel::setValue(const QString& path, const QVariant& v) {
  QStringList parts = path.split('.');
  nlohmann::json* node = &doc_;
  for (int i = 0; i + 1 < parts.size(); ++i) {
    auto& next = (*node)[parts[i].toStdString()];
    if (!next.is_object()) next = nlohmann::json::object();
    node = &next;
  }
  const std::string key = parts.back().toStdString();
  if (!v.isValid()) {
    if (!node->contains(key)) return;
    node->erase(key);
  } else {
    nlohmann::json j = toJson(v);
    if (node->contains(key) && (*node)[key] == j) return;
    (*node)[key] = j;
  }
  modified_ = true;
  validate();
}

void JobModel::retainKeys(const QString& path, const QStringList& keys) {
  nlohmann::json* node = &doc_;
  for (const auto& part : path.split('.')) {
    auto it = node->find(part.toStdString());
    if (it == node->end() || !it->is_object()) return;
    node = &*it;
  }
  bool removed = false;
  for (auto it = node->begin(); it != node->end();) {
    if (!keys.contains(QString::fromStdString(it.key()))) {
      it = node->erase(it);
      removed = true;
    } else {
      ++it;
    }
  }
  if (removed) {
    modified_ = true;
    validate();
  }
}

bool JobModel::load(const QString& file, QString* error) {
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) {
    if (error) *error = QStringLiteral("cannot open \"%1\": %2").arg(file, f.errorString());
    return false;
  }
  QByteArray bytes = f.readAll();
  auto doc = nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    if (error) *error = QStringLiteral("\"%1\" is not a JSON object").arg(file);
    return false;
  }
  file_ = file;
  setDocument(doc);
  modified_ = false;
  emit fileChanged();
  return true;
}

bool JobModel::save(const QString& file, QString* error) {
  QFile f(file);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = QStringLiteral("cannot write \"%1\": %2").arg(file, f.errorString());
    return false;
  }
  f.write(QByteArray::fromStdString(doc_.dump(2) + "\n"));
  file_ = file;
  modified_ = false;
  emit fileChanged();
  return true;
}

}  // namespace pw::gui

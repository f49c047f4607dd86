#include "gui/models/job_model.h"

#include <QFile>
#include <QStringList>
#include <algorithm>

#include "gui/models/nas_core.h"
#include "gui/models/saved_file.h"
#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"

namespace pw::gui {
namespace {

// "model.widths[1]" -> the key that holds it, as a JSON pointer
// ("/model/widths"); indices before the last key are followed
// ("search_space.layers[0].candidates[1].op" -> "/search_space/layers/0/candidates/1/op").
std::optional<nlohmann::json::json_pointer> field_pointer(const std::string& path) {
  if (path.empty() || path == "$") return std::nullopt;
  std::string p = path;
  if (!p.empty() && p.back() == ']') p = p.substr(0, p.rfind('['));
  std::string ptr;
  for (char c : p) {
    if (c == '.' || c == '[') ptr += '/';
    else if (c != ']') ptr += c;
  }
  return nlohmann::json::json_pointer("/" + ptr);
}

// A supernet job's search space is parsed apart from the job (by pw_core's
// nas layer, as prepare_nas_job does): its errors, with their paths, are
// the job's too.
JobSpec parse_with_search_space(const nlohmann::json& doc) {
  JobSpec spec = parse_job(doc);
  if (nas::is_supernet_job(spec)) {
    nas::parse_search_space(spec);
    nas::supernet_mode(spec);
    nas::parse_evolution(spec);
  }
  return spec;
}

// Makes `path` acceptable to the parser, so that parsing again reaches the
// next problem. False when nothing could be changed.
bool repair(nlohmann::json& doc, const std::string& path, const nlohmann::json& fallback) {
  auto ptr = field_pointer(path);
  if (!ptr) return false;
  if (fallback.contains(*ptr) && (!doc.contains(*ptr) || doc.at(*ptr) != fallback.at(*ptr))) {
    // Missing parents become objects, then the field takes the fallback.
    nlohmann::json::json_pointer up = ptr->parent_pointer();
    if (!up.empty() && (!doc.contains(up) || !doc.at(up).is_object())) doc[up] = nlohmann::json::object();
    doc[*ptr] = fallback.at(*ptr);
    return true;
  }
  if (!doc.contains(*ptr)) return false;
  nlohmann::json& holder = doc.at(ptr->parent_pointer());
  if (!holder.is_object()) return false;
  holder.erase(ptr->back());
  return true;
}

}  // namespace

JobModel::JobModel(QObject* parent) : QObject(parent) { setDocument(defaultDocument()); modified_ = false; }

nlohmann::json JobModel::defaultDocument() {
  return nlohmann::json::parse(R"({
    "name": "bert24-4gpu",
    "model": {"kind": "bert", "precision": "fp16", "layers": 24, "hidden": 1024, "heads": 16, "seq_len": 128, "vocab": 30522},
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
  errors_.clear();
  error_path_.clear();
  error_.clear();
  spec_.reset();
  static const nlohmann::json fallback = defaultDocument();
  nlohmann::json probe = doc_;
  std::vector<std::string> repaired, kind_objects;
  // Each round repairs one field; a job has a few dozen at most.
  for (int round = 0; round < 64; ++round) {
    std::string path, reason;
    try {
      JobSpec spec = parse_with_search_space(probe);
      if (round == 0) spec_ = std::move(spec);
      break;
    } catch (const SpecError& e) {
      path = e.path();
      reason = e.reason();
    } catch (const std::exception& e) {
      path = "$";
      reason = e.what();
    }
    const bool again = std::find(repaired.begin(), repaired.end(), path) != repaired.end();
    const bool consequence = std::any_of(kind_objects.begin(), kind_objects.end(),
                                         [&](const std::string& o) { return path.rfind(o + ".", 0) == 0; });
    if (!again && !consequence) errors_.push_back({QString::fromStdString(path), QString::fromStdString(reason)});
    repaired.push_back(path);
    // A repaired field that fails again gets removed instead (its default).
    if (!(again ? repair(probe, path, nlohmann::json::object()) : repair(probe, path, fallback))) break;
    if (path.size() > 5 && path.compare(path.size() - 5, 5, ".kind") == 0) kind_objects.push_back(path.substr(0, path.size() - 5));
  }
  if (!errors_.isEmpty()) {
    error_path_ = errors_.front().path;
    error_ = errors_.front().message;
  }
  emit changed();
}

nlohmann::json JobModel::toJson(const QVariant& v) {
  switch (v.typeId()) {
    case QMetaType::Bool: return v.toBool();
    case QMetaType::Int:
    case QMetaType::LongLong:
    case QMetaType::UInt: return v.toLongLong();
    case QMetaType::ULongLong: return v.toULongLong();  // a 64-bit seed: above LLONG_MAX too
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
  if (j.is_number_unsigned()) return QVariant::fromValue<qulonglong>(j.get<unsigned long long>());
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
  // Bounded as every reader of a job is (core/spec/bounded_json.h): a
  // 100,000-deep document would overflow the stack when the model copies it.
  QByteArray bytes = f.read(static_cast<qint64>(kMaxJobFileBytes) + 1);
  if (static_cast<std::size_t>(bytes.size()) > kMaxJobFileBytes) {
    if (error) *error = QStringLiteral("\"%1\" is over the bound of a job file (16 MiB)").arg(file);
    return false;
  }
  nlohmann::json doc;
  try {
    doc = parse_bounded_json(bytes.toStdString());
  } catch (const SpecError& e) {
    if (error) *error = QStringLiteral("\"%1\": %2").arg(file, QString::fromStdString(e.what()));
    return false;
  }
  if (!doc.is_object()) {
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
  // Reached from the save dialog (its confirmation replaces a file) or Save
  // of the job's own file.
  if (QString why = save_confirmed_file(file, QByteArray::fromStdString(doc_.dump(2) + "\n")); !why.isEmpty()) {
    if (error) *error = why;
    return false;
  }
  file_ = file;
  modified_ = false;
  emit fileChanged();
  return true;
}

}  // namespace pw::gui

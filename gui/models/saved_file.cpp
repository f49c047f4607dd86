#include "gui/models/saved_file.h"

#include <exception>
#include <string_view>

#include "core/io/checked_write.h"

namespace pw::gui {
namespace {
OutputTarget confirmed(const QString& file) { return {file.toStdString(), "save", true}; }
}  // namespace

QString save_confirmed_file(const QString& file, const QByteArray& bytes) {
  try {
    write_output(confirmed(file), std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
    return {};
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

QString save_confirmed_file(const QString& file, const std::function<void(std::ostream&)>& write) {
  try {
    OutputStream out(confirmed(file));
    write(out.stream());
    out.commit();
    return {};
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

}  // namespace pw::gui

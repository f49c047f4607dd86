#pragma once
// The studio's save dialogs write through the output rule
// (core/io/checked_write.h): the dialog's own confirmation stands for
// --overwrite, the bytes go to a temporary file renamed into place (a failed
// save leaves the old file whole), and an SQLite file (a recorded run) is
// never replaced, confirmed or not.
#include <QByteArray>
#include <QString>
#include <ostream>
#include <functional>

namespace pw::gui {

// The file as `bytes`; an empty string, or the reason it was not written.
QString save_confirmed_file(const QString& file, const QByteArray& bytes);
// The same, streamed (a trace of a long run).
QString save_confirmed_file(const QString& file, const std::function<void(std::ostream&)>& write);

}  // namespace pw::gui

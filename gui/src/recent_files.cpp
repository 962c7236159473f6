#include "loom/gui/recent_files.hpp"

#include <QFileInfo>
#include <QSettings>

namespace loom::gui {
namespace {

const char* const kKey = "recent_files";

}  // namespace

QStringList RecentFiles::files() const { return QSettings().value(kKey).toStringList(); }

void RecentFiles::add(const QString& path) {
  if (path.isEmpty()) return;
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList list = files();
  list.removeAll(absolute);
  list.prepend(absolute);
  while (list.size() > kMaxFiles) list.removeLast();
  QSettings().setValue(kKey, list);
}

void RecentFiles::clear() { QSettings().remove(kKey); }

}  // namespace loom::gui

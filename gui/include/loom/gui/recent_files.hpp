#pragma once
// The files opened last, most recent first, kept in the user's settings between sessions.
#include <QStringList>

namespace loom::gui {

class RecentFiles {
 public:
  static constexpr int kMaxFiles = 10;

  QStringList files() const;
  void add(const QString& path);  // moves it to the front, dropping the oldest beyond kMaxFiles
  void clear();
};

}  // namespace loom::gui

#pragma once
#include <QString>
#include <QWidget>

namespace loom::gui {

// `content` under a caption: `title` in bold, then `note`, as one widget for a splitter.
QWidget* titled(const QString& title, QWidget* content, const QString& note = {});

}  // namespace loom::gui

#include "loom/gui/titled.hpp"

#include <QLabel>
#include <QVBoxLayout>

namespace loom::gui {

QWidget* titled(const QString& title, QWidget* content, const QString& note) {
  auto* box = new QWidget;
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(new QLabel("<b>" + title.toHtmlEscaped() + "</b> " + note.toHtmlEscaped()));
  layout->addWidget(content, 1);
  return box;
}

}  // namespace loom::gui

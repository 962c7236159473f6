#pragma once
// Syntax highlighting for the spec language: keywords, declaration names, numbers, strings and
// comments (block comments may span lines).
#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

namespace loom::gui {

class SpecHighlighter : public QSyntaxHighlighter {
  Q_OBJECT

 public:
  explicit SpecHighlighter(QTextDocument* document);

 protected:
  void highlightBlock(const QString& text) override;

 private:
  struct Rule {
    QRegularExpression pattern;
    QTextCharFormat format;
    int group = 0;  // the capture group the format applies to
  };
  std::vector<Rule> rules_;
  QTextCharFormat comment_;
};

}  // namespace loom::gui

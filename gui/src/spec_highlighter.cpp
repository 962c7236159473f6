#include "loom/gui/spec_highlighter.hpp"

namespace loom::gui {
namespace {

// The grammar's keywords (grammar/Loom.g4).
const char* const kKeywords[] = {"import", "op",  "parallel", "fused",  "axiom",     "rule", "forall", "where", "let", "require",
                                 "in",     "int", "backward", "values", "lowers_to", "sum",  "max",    "min",   "inf"};

QTextCharFormat text_format(const QColor& color, bool bold = false, bool italic = false) {
  QTextCharFormat f;
  f.setForeground(color);
  if (bold) f.setFontWeight(QFont::Bold);
  f.setFontItalic(italic);
  return f;
}

}  // namespace

SpecHighlighter::SpecHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {
  QStringList words;
  for (const char* k : kKeywords) words << QString::fromLatin1(k);
  rules_.push_back({QRegularExpression("\\b(" + words.join('|') + ")\\b"), text_format(QColor(0x1f, 0x3f, 0xa8), true)});
  rules_.push_back({QRegularExpression("\\b(?:op|parallel|fused|axiom|rule)\\s+([A-Za-z_][A-Za-z0-9_]*)"),
                    text_format(QColor(0x8a, 0x1c, 0x7c), true), 1});
  rules_.push_back({QRegularExpression("\\b[0-9]+(?:\\.[0-9]+)?\\b"), text_format(QColor(0x09, 0x86, 0x58))});
  rules_.push_back({QRegularExpression("=>|=="), text_format(QColor(0xb3, 0x46, 0x00), true)});
  rules_.push_back({QRegularExpression("\"[^\"]*\""), text_format(QColor(0xa3, 0x15, 0x15))});
  rules_.push_back({QRegularExpression("//[^\n]*"), text_format(QColor(0x6a, 0x73, 0x7d), false, true)});
  comment_ = text_format(QColor(0x6a, 0x73, 0x7d), false, true);
}

void SpecHighlighter::highlightBlock(const QString& text) {
  for (const Rule& rule : rules_) {
    for (auto it = rule.pattern.globalMatch(text); it.hasNext();) {
      const auto m = it.next();
      setFormat(static_cast<int>(m.capturedStart(rule.group)), static_cast<int>(m.capturedLength(rule.group)), rule.format);
    }
  }
  // Block comments: state 1 means the previous line ended inside one.
  setCurrentBlockState(0);
  qsizetype start = previousBlockState() == 1 ? 0 : text.indexOf("/*");
  while (start >= 0) {
    const qsizetype end = text.indexOf("*/", start + (previousBlockState() == 1 && start == 0 ? 0 : 2));
    qsizetype length;
    if (end < 0) {
      setCurrentBlockState(1);
      length = text.length() - start;
    } else {
      length = end - start + 2;
    }
    setFormat(static_cast<int>(start), static_cast<int>(length), comment_);
    start = end < 0 ? -1 : text.indexOf("/*", start + length);
  }
}

}  // namespace loom::gui

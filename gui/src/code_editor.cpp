#include "loom/gui/code_editor.hpp"

#include <algorithm>

#include <QFontDatabase>
#include <QPainter>
#include <QTextBlock>

namespace loom::gui {
namespace {

class Margin : public QWidget {
 public:
  explicit Margin(CodeEditor* editor) : QWidget(editor), editor_(editor) {}
  QSize sizeHint() const override { return {editor_->margin_width(), 0}; }

 protected:
  void paintEvent(QPaintEvent* event) override { editor_->paint_margin(event); }

 private:
  CodeEditor* editor_;
};

}  // namespace

CodeEditor::CodeEditor(QWidget* parent) : QPlainTextEdit(parent), margin_(new Margin(this)) {
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setTabStopDistance(fontMetrics().horizontalAdvance(' ') * 2);
  connect(this, &QPlainTextEdit::blockCountChanged, this, [this] { setViewportMargins(margin_width(), 0, 0, 0); });
  connect(this, &QPlainTextEdit::updateRequest, this, [this](const QRect& rect, int dy) {
    if (dy)
      margin_->scroll(0, dy);
    else
      margin_->update(0, rect.y(), margin_->width(), rect.height());
  });
  setViewportMargins(margin_width(), 0, 0, 0);
}

int CodeEditor::margin_width() const {
  int digits = 1;
  for (int n = std::max(1, blockCount()); n >= 10; n /= 10) ++digits;
  return 12 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * std::max(3, digits);
}

void CodeEditor::resizeEvent(QResizeEvent* event) {
  QPlainTextEdit::resizeEvent(event);
  const QRect r = contentsRect();
  margin_->setGeometry(QRect(r.left(), r.top(), margin_width(), r.height()));
}

void CodeEditor::paint_margin(QPaintEvent* event) {
  QPainter painter(margin_);
  painter.fillRect(event->rect(), QColor(0xf3, 0xf3, 0xf3));
  QTextBlock block = firstVisibleBlock();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  while (block.isValid() && top <= event->rect().bottom()) {
    const int height = qRound(blockBoundingRect(block).height());
    if (block.isVisible()) {
      const int line = block.blockNumber() + 1;
      const bool problem = problem_lines_.count(line) > 0;
      if (problem) painter.fillRect(0, top, margin_->width(), height, QColor(0xf8, 0xd7, 0xd7));
      painter.setPen(problem ? QColor(0xb0, 0x00, 0x20) : QColor(0x99, 0x99, 0x99));
      painter.drawText(0, top, margin_->width() - 6, height, Qt::AlignRight | Qt::AlignVCenter, QString::number(line));
    }
    block = block.next();
    top += height;
  }
}

void CodeEditor::mark_problems(const std::vector<std::pair<int, int>>& places) {
  QList<QTextEdit::ExtraSelection> selections;
  problem_lines_.clear();
  for (const auto& [line, column] : places) {
    const QTextBlock block = document()->findBlockByNumber(line - 1);
    if (!block.isValid()) continue;
    problem_lines_.insert(line);
    QTextEdit::ExtraSelection s;
    s.format.setUnderlineStyle(QTextCharFormat::SpellCheckUnderline);
    s.format.setUnderlineColor(Qt::red);
    s.format.setBackground(QColor(0xfd, 0xec, 0xec));
    s.cursor = QTextCursor(block);
    s.cursor.movePosition(QTextCursor::Right, QTextCursor::MoveAnchor, std::clamp(column - 1, 0, block.length() - 1));
    s.cursor.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
    if (!s.cursor.hasSelection()) s.cursor.movePosition(QTextCursor::StartOfBlock, QTextCursor::KeepAnchor);
    selections.push_back(s);
  }
  setExtraSelections(selections);
  margin_->update();
}

void CodeEditor::go_to(int line, int column) {
  const QTextBlock block = document()->findBlockByNumber(line - 1);
  if (!block.isValid()) return;
  QTextCursor c(block);
  c.movePosition(QTextCursor::Right, QTextCursor::MoveAnchor, std::clamp(column - 1, 0, block.length() - 1));
  setTextCursor(c);
  centerCursor();
  setFocus();
}

}  // namespace loom::gui

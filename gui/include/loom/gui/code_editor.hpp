#pragma once
// A plain-text editor with line numbers in the left margin and marked problem lines.
#include <set>

#include <QPlainTextEdit>

namespace loom::gui {

class CodeEditor : public QPlainTextEdit {
  Q_OBJECT

 public:
  explicit CodeEditor(QWidget* parent = nullptr);

  // Underlines from (line, column) to the end of each line given (1-based; column 0: whole line).
  void mark_problems(const std::vector<std::pair<int, int>>& places);
  void go_to(int line, int column);
  const std::set<int>& problem_lines() const { return problem_lines_; }

  int margin_width() const;
  void paint_margin(QPaintEvent* event);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  QWidget* margin_;
  std::set<int> problem_lines_;
};

}  // namespace loom::gui

#pragma once
// Progress on stderr. On a terminal, one line redrawn in place, at most ten times a second. In a
// log (stderr redirected), no carriage returns or escape codes: a line when a stage begins and
// whenever another tenth of it is done, or every ten seconds where its share is unknown.
#include <chrono>
#include <string>

namespace loom::cli {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled = true);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { finish(); }

  // `text` is the state within `stage`; `done` the share of the stage done (0 to 1), negative
  // where unknown. A new stage starts a new line.
  void show(const std::string& stage, const std::string& text, double done = -1);
  // Ends the line drawn in place, if any, leaving it on the screen.
  void finish();
  // Erases the line drawn in place, if any.
  void clear();

  // `[#####-----]`, `width` wide, for the share `done`.
  static std::string bar(double done, int width);

 private:
  bool enabled_, terminal_;
  bool drawn_ = false;  // a line is drawn in place and not yet ended
  std::string stage_;
  int tenth_ = -1;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace loom::cli

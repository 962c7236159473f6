#include "progress_line.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace loom::cli {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled), terminal_(::isatty(::fileno(stderr)) != 0) {}

std::string ProgressLine::bar(double done, int width) {
  const int filled = std::clamp(static_cast<int>(width * done), 0, width);
  return "[" + std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(width - filled), '-') + "]";
}

void ProgressLine::show(const std::string& stage, const std::string& text, double done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const bool new_stage = stage != stage_;
  const int tenth = done < 0 ? -1 : std::clamp(static_cast<int>(10 * done), 0, 10);
  const std::string line = stage.empty() ? text : text.empty() ? stage : stage + "  " + text;
  if (terminal_) {
    if (!new_stage && done < 1 && now - last_ < std::chrono::milliseconds(100)) return;
    if (new_stage && drawn_) std::cerr << "\n";
    std::cerr << "\r" << line << "\033[K" << std::flush;
    drawn_ = true;
  } else {
    const bool due = new_stage || (done >= 0 ? tenth > tenth_ : now - last_ >= std::chrono::seconds(10));
    if (!due) return;
    std::cerr << line << "\n" << std::flush;
  }
  stage_ = stage;
  tenth_ = tenth;
  last_ = now;
}

void ProgressLine::finish() {
  if (drawn_) std::cerr << "\n" << std::flush;
  drawn_ = false;
}

void ProgressLine::clear() {
  if (drawn_) std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace loom::cli

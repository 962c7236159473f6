#include "loom/pcg/diagnostic.hpp"

#include <utility>

namespace loom {

std::string SourceLocation::to_string() const {
  std::string out = file;
  auto append = [&out](int value) {
    if (!out.empty()) out += ':';
    out += std::to_string(value);
  };
  if (line > 0) {
    append(line);
    if (column > 0) append(column);
  }
  return out;
}

std::string Diagnostic::to_string() const {
  const std::string place = where.to_string();
  return place.empty() ? message : place + ": " + message;
}

namespace {

std::string join(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += '\n';
    out += d.to_string();
  }
  return out;
}

}  // namespace

LoomError::LoomError(std::vector<Diagnostic> diagnostics) : std::runtime_error(join(diagnostics)), diagnostics_(std::move(diagnostics)) {}

LoomError::LoomError(const std::string& message) : std::runtime_error(message), diagnostics_{Diagnostic{{}, message}} {}

}  // namespace loom

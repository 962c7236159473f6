#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace loom {

// A place in a source file; line and column are 1-based, 0 when unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  std::string to_string() const;
};

// One problem found in user input, printed as `file:line:col: message`.
struct Diagnostic {
  SourceLocation where;
  std::string message;

  std::string to_string() const;
};

// Thrown when input cannot be used; carries every problem found, not just the first.
class LoomError : public std::runtime_error {
 public:
  explicit LoomError(std::vector<Diagnostic> diagnostics);
  explicit LoomError(const std::string& message);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

}  // namespace loom

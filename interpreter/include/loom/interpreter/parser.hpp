#pragma once
#include <string>

#include "loom/interpreter/ast.hpp"

namespace loom::spec {

// Parses one file's text; `file` names it in diagnostics. Throws LoomError with every syntax
// error found (each `file:line:col: message`).
Module parse_module(const std::string& text, const std::string& file);

}  // namespace loom::spec

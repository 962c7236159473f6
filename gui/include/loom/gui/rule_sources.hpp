#pragma once
// Where the rule browser's rules come from: a rule library file (loom-rules JSON) or the `rule`
// declarations of a .loom file, each with the spec library they are read, drawn and proved against.
#include <memory>
#include <string>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::gui {

struct RuleSource {
  std::shared_ptr<const spec::Library> library;
  pcg::RuleLibrary rules;
};

// The bundled spec library (as every command's default --specs), loaded once.
std::shared_ptr<const spec::Library> bundled_library();

// The bundled library together with `files` (a user's specs): the ops and axioms rules of those
// files are drawn and proved with, as `loom verify --specs specs FILE...` reads them.
std::shared_ptr<const spec::Library> bundled_library_with(const std::vector<std::string>& files);

// A .json rule library read against the bundled specs plus the spec files it names, or a .loom
// file's rules read against the bundled specs plus that file. Throws LoomError naming the file.
RuleSource load_rule_source(const std::string& path);

// The rules declared in `file` (as the library names it), as graphs.
pcg::RuleLibrary rules_declared_in(const spec::Library& library, const std::string& file);

}  // namespace loom::gui

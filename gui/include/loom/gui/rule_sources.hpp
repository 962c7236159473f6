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

// Makes `paths` (spec files or directories, as --specs gives them) the base library in place of the
// bundled specs. Throws LoomError naming a path that does not exist.
void use_base_specs(const std::vector<std::string>& paths);
// The base library's paths: those given to use_base_specs, or the bundled specs/.
std::vector<std::string> base_spec_paths();

// The base spec library (the bundled specs unless --specs says otherwise), loaded once.
std::shared_ptr<const spec::Library> base_library();

// The base library together with `files` (a user's specs): the ops and axioms rules of those
// files are drawn and proved with, as `loom verify --specs specs FILE...` reads them.
std::shared_ptr<const spec::Library> base_library_with(const std::vector<std::string>& files);

// A .json rule library read against the base specs plus the spec files it names, or a .loom
// file's rules read against the base specs plus that file. Throws LoomError naming the file.
RuleSource load_rule_source(const std::string& path);

// The rules declared in `file` (as the library names it), as graphs.
pcg::RuleLibrary rules_declared_in(const spec::Library& library, const std::string& file);

}  // namespace loom::gui

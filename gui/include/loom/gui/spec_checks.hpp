#pragma once
// What the editor asks of the interpreter, as `loom check` does it: load a spec text (all or
// nothing, with every diagnostic), and check each axiom numerically.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/interpreter/axiom_check.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/pcg/diagnostic.hpp"

namespace loom::gui {

struct SpecLoad {
  std::shared_ptr<const spec::Library> library;  // null when the text has errors
  std::vector<Diagnostic> errors;
};

// `name` names the text in diagnostics; imports resolve relative to `directory`.
SpecLoad load_spec_text(const std::string& text, const std::string& name, const std::string& directory);

struct AxiomOutcome {
  std::string axiom;
  std::string where;  // file:line:col
  bool sound = false;
  std::string problem;  // the counterexample when unsound
};

// Checks every axiom of `library`, as `loom check` does. `progress(done, total)` is called after each; checking stops early when
// `cancelled` turns true.
std::vector<AxiomOutcome> check_axioms(const spec::Library& library, const spec::AxiomCheckOptions& options,
                                       const std::atomic<bool>& cancelled,
                                       const std::function<void(std::size_t done, std::size_t total)>& progress = {});

}  // namespace loom::gui

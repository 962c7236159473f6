#include "loom/gui/spec_checks.hpp"

namespace loom::gui {

SpecLoad load_spec_text(const std::string& text, const std::string& name, const std::string& directory) {
  SpecLoad out;
  try {
    out.library = std::make_shared<const spec::Library>(spec::Library::from_text(text, name, directory));
  } catch (const LoomError& e) {
    out.errors = e.diagnostics();
    if (out.errors.empty()) out.errors.push_back({{}, e.what()});
  }
  return out;
}

std::vector<AxiomOutcome> check_axioms(const spec::Library& library, const spec::AxiomCheckOptions& options,
                                       const std::atomic<bool>& cancelled, const std::function<void(std::size_t, std::size_t)>& progress) {
  const auto& axioms = library.axioms();
  std::vector<AxiomOutcome> out;
  for (std::size_t i = 0; i < axioms.size() && !cancelled; ++i) {
    const spec::AxiomResult r = spec::check_axiom(library, *axioms[i], options);
    out.push_back({axioms[i]->name, axioms[i]->loc.to_string(), r.sound, r.problem});
    if (progress) progress(i + 1, axioms.size());
  }
  return out;
}

}  // namespace loom::gui

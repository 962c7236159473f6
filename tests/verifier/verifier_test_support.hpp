#pragma once
// Libraries shared by the verifier tests, loaded once per test program.
#include <string>

#include "loom/interpreter/library.hpp"
#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/obligation.hpp"

namespace loom::verifier::testing {

inline std::string data_file(const std::string& name) { return std::string(LOOM_VERIFIER_TEST_DATA) + "/" + name; }

// The bundled operator library with every axiom.
inline const spec::Library& bundled() {
  static const spec::Library library = spec::Library::load({spec::Library::default_specs_dir()});
  return library;
}
inline const AxiomSet& bundled_axioms() {
  static const AxiomSet axioms = prepare_axioms(bundled());
  return axioms;
}

// tests/verifier/data/core_library.loom: six axioms and three rules with known proofs.
inline const spec::Library& core_library() {
  static const spec::Library library = spec::Library::load({data_file("core_library.loom")});
  return library;
}
inline const AxiomSet& core_axioms() {
  static const AxiomSet axioms = prepare_axioms(core_library());
  return axioms;
}

inline const Obligation& find_obligation(const std::vector<Obligation>& obligations, const std::string& name) {
  for (const auto& ob : obligations)
    if (ob.name == name) return ob;
  throw std::runtime_error("no rule " + name);
}

}  // namespace loom::verifier::testing

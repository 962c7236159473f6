#pragma once
// Axioms as quantified Z3 formulas with triggers. Each side of an axiom that is not a bare
// variable becomes the trigger of one formula `forall vars. guards => side == other side`, so Z3
// rewrites in both directions, and only when a term of that form exists. Attribute arithmetic
// (`ph + e`, dimension symbols) is replaced in the trigger by a fresh variable plus an equality
// guard; integer binders a trigger does not bind are instantiated over their finite domains. A
// side whose instances would build larger terms it matches again (a matching loop) is not used.
#include <string>
#include <vector>

#include <z3++.h>

#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/encoding.hpp"

namespace loom::verifier {

struct EncodedAxiom {
  std::string name;
  std::vector<z3::expr> formulas;
  std::string unusable;  // why no formula could be built; empty when the axiom is usable
};

EncodedAxiom encode_axiom(Vocabulary& vocabulary, const PreparedAxiom& axiom);

}  // namespace loom::verifier

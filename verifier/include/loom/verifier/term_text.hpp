#pragma once
// Renders terms, quantifiers and equations back as spec syntax: for messages, Alive-style
// reports and the canonical statements that cache keys and axiom fingerprints hash.
#include <string>

#include "loom/interpreter/ast.hpp"

namespace loom::verifier {

// e.g. `combine<0, 2>(relu(partition<0, 2>(x)))`; named attributes print as `name = value`.
std::string term_to_string(const spec::Term& term);

// e.g. `forall d: int in {2, 4}, x: [m, n] {V: d} where m % d == 0. `; empty without binders.
std::string quantifier_to_string(const spec::Quantifier& quantifier);

// `<quantifier><lhs> <arrow> <rhs>`, with arrow `==` for axioms and `=>` for rules.
std::string equation_to_string(const spec::EquationDecl& equation, const std::string& arrow);

}  // namespace loom::verifier

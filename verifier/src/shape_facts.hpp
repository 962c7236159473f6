#pragma once
// What operator signatures say about the shapes of a rule's subterms, so that an axiom whose
// attributes are its tensors' sizes (`split<1, n1>(concat<1>(x, y)).0 == x`) applies to results
// of operators, not only to the rule's variables.
#include <vector>

#include <z3++.h>

#include "loom/verifier/encoding.hpp"
#include "loom/verifier/obligation.hpp"

namespace loom::verifier {

// For every operator application in the goals: each output dimension the signature fixes, as an
// expression of the application's input dimensions and attributes. A dimension written after a
// rank pack is stated from the end (rdim), and from the front too where the variables' shapes fix
// the rank; a size Z3 cannot express states nothing.
z3::expr output_shape_facts(Vocabulary& vocabulary, const Obligation& ob, const EncodingScope& scope);

}  // namespace loom::verifier

#pragma once
// Turns `rule` declarations of a .loom file into pcg::Rules, so hand-written rules can be applied
// by the rewrite engine like generated ones.
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::spec {

// Both sides built as graphs over the rule's variables (in binder order, or first use), at the
// first sizes for which both sides type-check to the same shapes: every dimension symbol, and
// every dimension of a variable written without a shape, is tried at 8, 4, 16, 2, 6 and 12 (the
// symbols all at that size, then at distinct multiples of it, in either order); unshaped
// variables at rank 2, 1, 3 and 4. Integer binders take the first value their domain allows.
// Throws LoomError at the rule when no size fits, naming the side, or the shapes the sides differ in.
pcg::Rule rule_from_declaration(const Library& library, const EquationDecl& rule);

// Every rule of `library` that cannot be typed, or whose sides differ in shape, as a diagnostic
// at the rule naming the side. Loading a library refuses it with these.
std::vector<Diagnostic> type_rules(const Library& library);

// Every rule the library declares, in order.
std::vector<pcg::Rule> rules_of(const Library& library);

}  // namespace loom::spec

#pragma once
// Turns rules into proof obligations: `rule` declarations of .loom files, and the rules of a rule
// library (PCG pairs over shared named inputs, converted to terms; a shared subgraph simply
// appears in both places it is used).
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/verifier/obligation.hpp"

namespace loom::verifier {

Obligation obligation_from_equation(const spec::EquationDecl& rule);

// A `rule` declaration as a rule of a rule library: its graphs (spec::rule_from_declaration) and,
// as its text, the declaration in spec syntax.
pcg::Rule rule_of_declaration(const spec::Library& library, const spec::EquationDecl& rule);

// The rules of `library` declared in one of `files` (every rule when `files` is empty).
std::vector<Obligation> obligations_from_library(const spec::Library& library, const std::vector<std::string>& files = {});

// `file` names the library in messages. Throws LoomError naming the rule's JSON path when a
// graph uses a form the spec library does not declare.
Obligation obligation_from_rule(const pcg::Rule& rule, const spec::Library& library, const std::string& json_path = "",
                                const std::string& file = "");
std::vector<Obligation> obligations_from_rule_library(const pcg::RuleLibrary& rules, const spec::Library& library,
                                                      const std::string& file = "");

}  // namespace loom::verifier

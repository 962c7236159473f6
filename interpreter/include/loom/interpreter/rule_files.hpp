#pragma once
// Rules from the files commands take: rule libraries (loom-rules JSON) and .loom files of `rule`
// declarations.
#include <functional>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::spec {

// How a `rule` declaration becomes a rule (rule_from_declaration unless told otherwise).
using DeclarationToRule = std::function<pcg::Rule(const Library&, const EquationDecl&)>;

// The rules of one file, with the verification records a JSON library carries (which readers
// judge with verifier::ProofChecker). Errors name the file.
std::vector<pcg::Rule> load_rule_file(const Library& library, const std::vector<std::string>& specs, const std::string& path,
                                      const DeclarationToRule& convert = {});

}  // namespace loom::spec

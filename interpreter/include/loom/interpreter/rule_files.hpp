#pragma once
// Rules from the files commands take: rule libraries (loom-rules JSON) and .loom files of `rule`
// declarations.
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::spec {

// The rules of one file, with the verification records a JSON library carries (which readers
// judge with verifier::ProofChecker). Errors name the file.
std::vector<pcg::Rule> load_rule_file(const Library& library, const std::vector<std::string>& specs, const std::string& path);

}  // namespace loom::spec

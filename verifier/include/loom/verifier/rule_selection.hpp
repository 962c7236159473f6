#pragma once
// The rules a search may use, read from rule files with each record taken as ProofChecker says:
// only rules whose proof still holds are used by default.
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::verifier {

struct RuleSelection {
  // The rules to use, each with its verification replaced by its standing (a stale record reads
  // "stale", with what changed; a rule without a record has none).
  std::vector<pcg::Rule> rules;
  // Rules whose proof failed (refuted or unknown): `FILE: rule ID is refuted`. Never used.
  std::vector<std::string> left_out;
  // Rules with no valid proof (stale, or never verified): `FILE: rule ID is stale: why`. Used
  // only with include_unverified; otherwise the caller refuses them.
  std::vector<std::string> unproved;
};

// The bundled verified rule libraries, which `loom optimize` uses when given no rules: the
// hand-written rules proved (specs/rules/unity.verified.json), the generated ones over Unity's
// op set on matrices (specs/rules/generated.verified.json) and over ReLU, addition and
// concatenation of rank-4 feature maps (specs/rules/feature_maps.verified.json), both made by
// scripts/bundle_rules.sh.
std::vector<std::string> bundled_rule_libraries();

// The bundled import rules (specs/rules/onnx.verified.json): the proved fusions of the patterns
// model exporters write, which model loading applies to an ONNX file.
std::string bundled_import_rule_library();

struct ImportRules {
  std::vector<pcg::Rule> rules;
  std::vector<std::string> left_out;  // bundled rules that do not prove against the library, and why
};

// The rules of `files`, for OnnxImportOptions::fusion_rules: every rule must be proved and current,
// and shrink what it matches (fusion applies rules until none matches), else throws LoomError
// naming each one that does not. None given: the bundled import rules that are proved against
// `library`, the others listed in `left_out`.
ImportRules import_rules(const spec::Library& library, const std::vector<std::string>& files = {});

// Reads every file (rule libraries or .loom rule files; errors name the file) and sorts its rules.
// Plans name rules by id, so two different rules with one id are refused, naming both files; the
// same rule given twice is taken once.
RuleSelection select_rules(const spec::Library& library, const std::vector<std::string>& specs, const std::vector<std::string>& files,
                           bool include_unverified);

}  // namespace loom::verifier

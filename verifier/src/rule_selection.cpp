#include "loom/verifier/rule_selection.hpp"

#include "loom/interpreter/rule_files.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/rule_loading.hpp"

namespace loom::verifier {

std::string bundled_rule_library() { return spec::Library::default_specs_dir() + "/rules/unity.verified.json"; }

RuleSelection select_rules(const spec::Library& library, const std::vector<std::string>& specs, const std::vector<std::string>& files,
                           bool include_unverified) {
  RuleSelection out;
  const ProofChecker checker(library);
  for (const std::string& file : files) {
    for (pcg::Rule& rule : spec::load_rule_file(library, specs, file, rule_of_declaration)) {
      rule.verification = checker.standing(rule);
      const std::string named = file + ": rule " + rule.id + " is " + standing_name(rule.verification);
      const auto status = rule.verification ? rule.verification->status : pcg::VerificationStatus::Stale;
      if (status == pcg::VerificationStatus::Proved) {
        out.rules.push_back(std::move(rule));
      } else if (status == pcg::VerificationStatus::Refuted || status == pcg::VerificationStatus::Unknown) {
        out.left_out.push_back(named);
      } else {
        out.unproved.push_back(named + (rule.verification ? ": " + rule.verification->reason
                                                          : " (it carries no proof record; a .loom file never does)"));
        if (include_unverified) out.rules.push_back(std::move(rule));
      }
    }
  }
  return out;
}

}  // namespace loom::verifier

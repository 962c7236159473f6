#include "loom/verifier/rule_selection.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "loom/interpreter/rule_files.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/rule_loading.hpp"

namespace loom::verifier {

std::vector<std::string> bundled_rule_libraries() {
  const std::string rules = spec::Library::default_specs_dir() + "/rules/";
  return {rules + "unity.verified.json", rules + "generated.verified.json", rules + "feature_maps.verified.json"};
}

std::string bundled_import_rule_library() { return spec::Library::default_specs_dir() + "/rules/onnx.verified.json"; }

ImportRules import_rules(const spec::Library& library, const std::vector<std::string>& files) {
  ImportRules out;
  if (files.empty()) {
    try {
      RuleSelection bundled = select_rules(library, {}, {bundled_import_rule_library()}, false);
      out.rules = std::move(bundled.rules);
      out.left_out = std::move(bundled.left_out);
      out.left_out.insert(out.left_out.end(), bundled.unproved.begin(), bundled.unproved.end());
    } catch (const LoomError& e) {
      out.left_out.push_back(std::string("the bundled import rules do not read against these specs: ") + e.what());
    }
    return out;
  }
  RuleSelection selected = select_rules(library, {}, files, false);
  std::vector<std::string> refused = std::move(selected.left_out);
  refused.insert(refused.end(), selected.unproved.begin(), selected.unproved.end());
  for (const pcg::Rule& r : selected.rules)
    if (r.rhs.operator_count() >= r.lhs.operator_count())
      refused.push_back("rule " + r.id + " does not shrink what it matches (" + std::to_string(r.lhs.operator_count()) +
                        " operators into " + std::to_string(r.rhs.operator_count()) + "), so fusing with it need not end");
  if (!refused.empty()) {
    std::string message = "import rules must be proved and current, and shrink what they match, before they fuse a model:";
    for (const std::string& r : refused) message += "\n  " + r;
    throw LoomError(message);
  }
  out.rules = std::move(selected.rules);
  return out;
}

RuleSelection select_rules(const spec::Library& library, const std::vector<std::string>& specs, const std::vector<std::string>& files,
                           bool include_unverified) {
  RuleSelection out;
  const ProofChecker checker(library);
  std::map<std::string, std::pair<std::string, std::string>> seen;  // id -> file, content hash
  for (const std::string& file : files) {
    for (pcg::Rule& rule : spec::load_rule_file(library, specs, file, rule_of_declaration)) {
      const std::string hash = checker.content_hash(rule);
      if (auto [it, fresh] = seen.emplace(rule.id, std::make_pair(file, hash)); !fresh) {
        if (it->second.second == hash) continue;
        throw LoomError(file + ": rule " + rule.id + " is also the id of another rule in " + it->second.first +
                        ": plans name rules by id, so the libraries given together need distinct ids");
      }
      rule.verification = checker.standing(rule, hash);
      const std::string named = file + ": rule " + rule.id + " is " + standing_name(rule.verification);
      const auto status = rule.verification ? rule.verification->status : pcg::VerificationStatus::Stale;
      if (status == pcg::VerificationStatus::Proved) {
        out.rules.push_back(std::move(rule));
      } else if (status == pcg::VerificationStatus::Refuted || status == pcg::VerificationStatus::Unknown) {
        out.left_out.push_back(named);
      } else {
        out.unproved.push_back(
            named + (rule.verification ? ": " + rule.verification->reason : " (it carries no proof record; a .loom file never does)"));
        if (include_unverified) out.rules.push_back(std::move(rule));
      }
    }
  }
  return out;
}

}  // namespace loom::verifier

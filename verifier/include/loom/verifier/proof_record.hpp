#pragma once
// The soundness chain's first link: a proof record bound to what it proved. A record names the
// hash of the rule's canonical content, the hash of every axiom its proof used with that axiom's
// numeric check, and the Loom that proved it. A reader trusts a "proved" record only while all of
// these still match; otherwise the record is stale. Every reader of rule libraries and plans, and
// the verifier's result cache, decide this with the one ProofChecker below.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/fingerprint.hpp"

namespace loom::verifier {

// The version of Loom that writes and accepts proof records.
std::string loom_version();

// The rule as the record binds it: its id, binders (the inputs' shapes and degrees), both sides
// node by node, side conditions, spec text, and the definitions of every form it uses.
std::string rule_content(const pcg::Rule& rule, const spec::Library& library);
std::string rule_hash(const pcg::Rule& rule, const spec::Library& library);
// The same, with the forms' definitions taken from `definitions`.
std::string rule_content(const pcg::Rule& rule, FormDefinitions& definitions);
std::string rule_hash(const pcg::Rule& rule, FormDefinitions& definitions);

// An axiom's statement with its side conditions, and the definitions of every form it mentions:
// what its numeric check was run on.
std::string axiom_hash(const spec::EquationDecl& axiom, const spec::Library& library);

// Binds a fresh verdict about `rule` to its content: the rule's hash, each core axiom's hash and
// numeric check (from `axioms`), and this Loom's version.
void bind_record(pcg::Verification& verification, const pcg::Rule& rule, const spec::Library& library, const AxiomSet& axioms);

// Why a proof that used `used` no longer holds under the axioms `current` (name -> axiom_hash):
// an axiom removed or changed since. Nothing when every one still matches.
std::optional<std::string> stale_axiom(const std::vector<pcg::AxiomUse>& used, const std::map<std::string, std::string>& current);

class ProofChecker {
 public:
  explicit ProofChecker(const spec::Library& library);

  // The rule's verification as a reader must take it: a "proved" record that no longer matches
  // the rule's content, the current axioms or this Loom comes back Stale, with the reason. A rule
  // without a record comes back empty.
  std::optional<pcg::Verification> standing(const pcg::Rule& rule) const;
  // The same, for a caller that has worked out rule_hash(rule, library) already.
  std::optional<pcg::Verification> standing(const pcg::Rule& rule, const std::string& content_hash) const;
  // rule_hash(rule, library), each form's definition worked out once for all the rules checked.
  std::string content_hash(const pcg::Rule& rule) const;

  const std::map<std::string, std::string>& axiom_hashes() const { return axiom_hashes_; }

 private:
  std::map<std::string, std::string> axiom_hashes_;
  mutable FormDefinitions definitions_;  // so a checker is for one thread at a time
};

// "proved", "refuted", "unknown", "stale", or "unverified" for a rule without a record.
std::string standing_name(const std::optional<pcg::Verification>& standing);

}  // namespace loom::verifier

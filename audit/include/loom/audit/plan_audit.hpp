#pragma once
// The audit of a plan's soundness chain, run by `loom verify PLAN`, before `loom train --plan` and
// by `loom simulate`. It holds when
//  - every substitution names a rule the plan carries, whose content is what the substitution
//    applied (its hash), and
//  - that rule is proved from the axioms as they are now: its proof is found again (in the result
//    cache, else with Z3), whatever record the plan carries, and
//  - replaying the substitutions from the plan's source graph gives the plan's graph, up to the
//    parallel operators and machine views of its mapping.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/plan.hpp"
#include "loom/verifier/result_cache.hpp"

namespace loom::audit {

struct AuditOptions {
  // Find every proof again; off (Studio), a record that still matches its rule is taken as proof.
  bool reprove = true;
  unsigned timeout_ms = 10000;             // per rule proved again
  verifier::ResultCache* cache = nullptr;  // read and updated when set
};

struct SubstitutionAudit {
  std::size_t index = 0;  // 1-based, as printed
  std::string rule;
  std::string category;
  std::string text;       // the rule in spec syntax, as the plan carries it
  bool reversed = false;  // applied right to left
  std::string rule_hash;  // of the content the plan carries
  // proved (its record holds, and the proof was found again), re-proved (the proof was found again,
  // the plan's record not matching), stale, refuted, unknown, unverified, or missing (no such rule)
  std::string status;
  std::vector<pcg::AxiomUse> axioms;  // the proof's axioms, with their hashes and numeric checks
  std::string problem;                // why the step breaks the chain; empty when it holds

  bool holds() const { return problem.empty(); }
};

struct PlanAudit {
  std::vector<SubstitutionAudit> substitutions;
  bool has_source = false;     // the plan records the graph its substitutions start from
  std::string replay_problem;  // why the replay does not give the plan's graph; empty when it does
  bool include_unverified = false;

  bool holds() const;
  // The first break in the chain, naming the substitution, the rule and the cause; empty when it holds.
  std::string first_problem() const;
  // One line: `chain holds: 2 substitutions, all proved; replayed from the source graph`.
  std::string verdict() const;
};

PlanAudit audit_plan(const search::Plan& plan, const spec::Library& library, const AuditOptions& options = {});

nlohmann::json audit_to_json(const PlanAudit& audit);
// The whole chain, a block per substitution, for `loom verify PLAN`.
std::string audit_text(const PlanAudit& audit);

}  // namespace loom::audit

#include "loom/audit/plan_audit.hpp"

#include <algorithm>
#include <sstream>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/replay.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"

namespace loom::audit {
namespace {

using pcg::VerificationStatus;

// Proves rules again where their records do not hold, with the axioms checked once, on demand.
class Reprover {
 public:
  Reprover(const spec::Library& library, const AuditOptions& options) : library_(library), options_(options) {}

  pcg::Verification prove(const pcg::Rule& rule) {
    if (!axioms_) axioms_ = verifier::prepare_axioms(library_);
    verifier::VerifyOptions vo;
    vo.timeout_ms = options_.timeout_ms;
    vo.cache = options_.cache;
    const verifier::VerifyReport report = verifier::verify(library_, *axioms_, {verifier::obligation_from_rule(rule, library_)}, vo);
    pcg::Verification v = report.verdicts.at(0).verification;
    verifier::bind_record(v, rule, library_, *axioms_);
    return v;
  }

 private:
  const spec::Library& library_;
  const AuditOptions& options_;
  std::optional<verifier::AxiomSet> axioms_;
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// A counterexample as one line, without the whole tensors the interpreter appends.
std::string refutation(const std::string& counterexample) {
  const std::string line = first_line(counterexample);
  return "the sides differ " + line.substr(0, line.find(" (left = "));
}

SubstitutionAudit audit_step(const search::Plan& plan, std::size_t i, const spec::Library& library, const verifier::ProofChecker& checker,
                             Reprover& reprover, const AuditOptions& options) {
  const search::AppliedSubstitution& s = plan.substitutions[i];
  SubstitutionAudit a;
  a.index = i + 1;
  a.rule = s.rule;
  a.category = s.category;
  a.reversed = s.reversed;
  auto rule = std::find_if(plan.rules.begin(), plan.rules.end(), [&](const pcg::Rule& r) { return r.id == s.rule; });
  if (rule == plan.rules.end()) {
    a.status = "missing";
    a.problem = "the plan does not carry the rule";
    return a;
  }
  a.text = rule->text;
  a.rule_hash = verifier::rule_hash(*rule, library);
  if (!s.rule_hash.empty() && s.rule_hash != a.rule_hash) {
    a.status = "stale";
    a.problem = "the rule the plan carries is not the one the substitution applied (its content hashes to " + a.rule_hash +
                ", the substitution recorded " + s.rule_hash + ")";
    return a;
  }
  const std::optional<pcg::Verification> standing = checker.standing(*rule);
  const bool record_holds = standing && standing->status == VerificationStatus::Proved;
  if (standing && standing->status == VerificationStatus::Refuted) {
    a.status = "refuted";
    a.problem = refutation(standing->counterexample);
    return a;
  }
  const std::string record = !standing ? "it carries no proof record"
                                       : "its proof record is " + verifier::standing_name(standing) +
                                             (standing->reason.empty() ? "" : " (" + first_line(standing->reason) + ")");
  if (!options.reprove) {
    a.status = verifier::standing_name(standing);
    if (record_holds)
      a.axioms = standing->axioms;
    else
      a.problem = "not proved: " + record;
    return a;
  }
  // The plan's own record is not evidence enough: the proof is found again, in the result cache
  // or with Z3, from the axioms as they are now.
  pcg::Verification again;
  try {
    again = reprover.prove(*rule);
  } catch (const std::exception& e) {
    a.status = verifier::standing_name(standing);
    a.problem = "cannot be proved again: " + first_line(e.what());
    return a;
  }
  switch (again.status) {
    case VerificationStatus::Proved:
      a.status = record_holds ? "proved" : "re-proved";
      a.axioms = again.axioms;
      return a;
    case VerificationStatus::Refuted:
      a.status = "refuted";
      a.problem = refutation(again.counterexample);
      return a;
    default:
      a.status = verifier::standing_name(standing);
      a.problem = "not proved: " + (record_holds ? std::string("its proof record matches, but") : record + ", and") +
                  " proving it again gave " + pcg::status_name(again.status) +
                  (again.reason.empty() ? "" : ": " + first_line(again.reason));
      return a;
  }
}

}  // namespace

bool PlanAudit::holds() const { return first_problem().empty(); }

std::string PlanAudit::first_problem() const {
  for (const SubstitutionAudit& s : substitutions)
    if (!s.holds()) return "substitution " + std::to_string(s.index) + " (rule " + s.rule + ") is " + s.status + ": " + s.problem;
  if (!replay_problem.empty()) return "replay mismatch: " + replay_problem;
  return "";
}

std::string PlanAudit::verdict() const {
  if (!holds()) return "chain broken: " + first_problem();
  std::ostringstream os;
  const std::size_t n = substitutions.size();
  os << "chain holds: ";
  if (n == 0)
    os << "no substitutions";
  else
    os << n << (n == 1 ? " substitution, " : " substitutions, ")
       << (std::all_of(substitutions.begin(), substitutions.end(), [](const SubstitutionAudit& s) { return s.status == "proved"; })
               ? "all proved"
               : "all proved (some here, their plan's records not matching them)");
  os << (has_source ? "; replayed from the source graph" : "; the plan records no source graph, so its graph is taken as written");
  if (include_unverified) os << "; made with --include-unverified";
  return os.str();
}

PlanAudit audit_plan(const search::Plan& plan, const spec::Library& library, const AuditOptions& options) {
  PlanAudit audit;
  audit.include_unverified = plan.include_unverified;
  audit.has_source = plan.source.size() > 0;
  const verifier::ProofChecker checker(library);
  Reprover reprover(library, options);
  for (std::size_t i = 0; i < plan.substitutions.size(); ++i)
    audit.substitutions.push_back(audit_step(plan, i, library, checker, reprover, options));
  if (!audit.has_source) {
    if (!plan.substitutions.empty()) audit.replay_problem = "the plan does not record the graph its substitutions start from";
    return audit;
  }
  try {
    const std::vector<search::ReplayStep> steps = search::replay_plan(plan, library);
    const pcg::Graph& replayed = steps.empty() ? plan.source : steps.back().after;
    if (auto difference = search::value_difference(replayed, plan.graph, library)) audit.replay_problem = *difference;
  } catch (const LoomError& e) {
    audit.replay_problem = e.what();
  }
  return audit;
}

nlohmann::json audit_to_json(const PlanAudit& audit) {
  nlohmann::json steps = nlohmann::json::array();
  for (const SubstitutionAudit& s : audit.substitutions) {
    nlohmann::json axioms = nlohmann::json::array();
    for (const pcg::AxiomUse& a : s.axioms)
      axioms.push_back({{"name", a.name}, {"hash", a.hash}, {"checked_instances", a.checked_instances}});
    nlohmann::json step = {{"index", s.index},   {"rule", s.rule},           {"category", s.category},
                           {"text", s.text},     {"rule_hash", s.rule_hash}, {"status", s.status},
                           {"holds", s.holds()}, {"axioms", axioms},         {"reversed", s.reversed}};
    if (!s.holds()) step["problem"] = s.problem;
    steps.push_back(std::move(step));
  }
  nlohmann::json replay = {{"holds", audit.replay_problem.empty()}, {"from_source", audit.has_source}};
  if (!audit.replay_problem.empty()) replay["problem"] = audit.replay_problem;
  nlohmann::json out = {{"holds", audit.holds()},
                        {"verdict", audit.verdict()},
                        {"include_unverified", audit.include_unverified},
                        {"substitutions", steps},
                        {"replay", replay}};
  return out;
}

std::string audit_text(const PlanAudit& audit) {
  std::ostringstream os;
  for (const SubstitutionAudit& s : audit.substitutions) {
    os << "----------------------------------------\n"
       << s.index << ". " << s.rule << (s.category.empty() ? "" : " (" + s.category + ")") << (s.reversed ? ", applied right to left" : "")
       << ": " << s.status;
    if (!s.rule_hash.empty()) os << "  [rule hash " << s.rule_hash << "]";
    os << "\n";
    if (!s.text.empty()) os << "   " << s.text << "\n";
    if (!s.axioms.empty()) {
      os << "   axioms:";
      for (const pcg::AxiomUse& a : s.axioms)
        os << "\n     " << a.name << "  [hash " << a.hash << ", sound on " << a.checked_instances << " random instances]";
      os << "\n";
    } else if (s.holds()) {
      os << "   axioms: none (the sides are the same up to renaming)\n";
    }
    if (!s.holds()) os << "   " << s.problem << "\n";
  }
  os << "----------------------------------------\nreplay: ";
  if (!audit.replay_problem.empty())
    os << audit.replay_problem << "\n";
  else if (audit.has_source)
    os << "the substitutions, applied to the source graph, give the plan's graph (up to its parallel operators and machine views)\n";
  else
    os << "the plan records no source graph and no substitutions\n";
  os << audit.verdict() << "\n";
  return os.str();
}

}  // namespace loom::audit

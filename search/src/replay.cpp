#include "loom/search/replay.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/match.hpp"

namespace loom::search {

pcg::Rewrite apply_at(const pcg::Graph& graph, const pcg::Rule& rule, const std::vector<int>& match_nodes,
                      const pcg::OpCatalog& catalog) {
  const pcg::GraphIndex index(graph);
  for (const pcg::Match& m : pcg::find_matches(index, rule)) {
    if (m.nodes != match_nodes) continue;
    pcg::RewriteOutcome outcome = pcg::apply_match(graph, rule, m, catalog);
    if (!outcome.rewrite) throw LoomError("rule " + rule.id + " cannot be applied at its recorded match: " + outcome.declined);
    return std::move(*outcome.rewrite);
  }
  throw LoomError("rule " + rule.id + " does not match the graph at its recorded nodes");
}

std::vector<pcg::Rule> rules_used(const std::vector<pcg::Rule>& library, const std::vector<AppliedSubstitution>& steps) {
  std::vector<pcg::Rule> out;
  for (const AppliedSubstitution& s : steps) {
    if (std::any_of(out.begin(), out.end(), [&](const pcg::Rule& r) { return r.id == s.rule; })) continue;
    auto it = std::find_if(library.begin(), library.end(), [&](const pcg::Rule& r) { return r.id == s.rule; });
    if (it != library.end()) out.push_back(*it);
  }
  return out;
}

std::vector<ReplayStep> replay_plan(const Plan& plan, const pcg::OpCatalog& catalog) {
  std::vector<ReplayStep> steps;
  if (plan.substitutions.empty()) return steps;
  if (plan.source.size() == 0) throw LoomError("the plan does not record the graph its substitutions start from");
  pcg::Graph current = plan.source;
  for (std::size_t i = 0; i < plan.substitutions.size(); ++i) {
    const AppliedSubstitution& s = plan.substitutions[i];
    const std::string step = "substitution " + std::to_string(i + 1) + " (" + s.rule + ")";
    auto rule = std::find_if(plan.rules.begin(), plan.rules.end(), [&](const pcg::Rule& r) { return r.id == s.rule; });
    if (rule == plan.rules.end()) throw LoomError(step + ": the plan does not hold this rule");
    if (s.match.empty()) throw LoomError(step + ": the plan does not record where it applied");
    ReplayStep r;
    r.substitution = s;
    r.before = current;
    try {
      pcg::Rewrite rewrite = apply_at(current, *rule, s.match, catalog);
      for (int n : s.match)
        if (n >= 0) r.matched.push_back(n);
      std::sort(r.matched.begin(), r.matched.end());
      r.inserted = std::move(rewrite.inserted);
      current = std::move(rewrite.graph);
    } catch (const LoomError& e) {
      throw LoomError(step + ": " + e.what());
    }
    r.after = current;
    steps.push_back(std::move(r));
  }
  return steps;
}

}  // namespace loom::search

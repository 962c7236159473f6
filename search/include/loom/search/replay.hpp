#pragma once
// Replaying a substitution sequence: each recorded step applied again where it was applied, so a
// plan can be stepped through from its source graph to the graph it runs.
#include <optional>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/plan.hpp"

namespace loom::search {

// Applies `rule` at the match of `graph` whose LHS nodes are `match_nodes` (pcg::Match::nodes).
// Throws LoomError when the rule does not match there or the match is declined.
pcg::Rewrite apply_at(const pcg::Graph& graph, const pcg::Rule& rule, const std::vector<pcg::NodeId>& match_nodes,
                      const pcg::OpCatalog& catalog);

// The rules of `library` that `steps` name, each once, in the order first named.
std::vector<pcg::Rule> rules_used(const std::vector<pcg::Rule>& library, const std::vector<AppliedSubstitution>& steps);

struct ReplayStep {
  AppliedSubstitution substitution;
  pcg::Graph before, after;
  std::vector<pcg::NodeId> matched;   // nodes of `before` the LHS matched, ascending
  std::vector<pcg::NodeId> inserted;  // nodes of `after` the RHS added
};

// Every step of the plan's substitutions from its source graph, with the plan's own rules. Throws
// LoomError naming the step when the plan lacks its source graph, a rule, or a step's match.
std::vector<ReplayStep> replay_plan(const Plan& plan, const pcg::OpCatalog& catalog);

// Whether `actual` computes what `expected` does, up to parallel and fused forms (which change
// degrees, never values) and machine views: the same graph inputs (names, kinds and dims), the
// same compute operators with the same attributes on the same values, and the same outputs in
// order. Folded weights are compared as their recipes (pcg::unfolded), so one folded and the same
// left unfolded agree. Returns what differs, naming a node of `actual` (unfolded), or nothing when
// they agree.
std::optional<std::string> value_difference(const pcg::Graph& expected, const pcg::Graph& actual, const spec::Library& library);

}  // namespace loom::search

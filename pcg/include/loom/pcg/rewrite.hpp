#pragma once
// Applying a matched rule: the LHS occurrence is replaced by the RHS, consumers of the LHS
// outputs are redirected, and the result is a new well-typed graph.
#include <optional>
#include <string>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::pcg {

struct Rewrite {
  Graph graph;
  std::vector<NodeId> old_to_new;  // for each node of the old graph, its id in the new one, or kNoNode if removed
  std::vector<NodeId> inserted;    // ids of the RHS nodes in the new graph
  // Nodes whose matches may have changed, new ids: the inserted nodes, the producers of the bound
  // inputs and the consumers of the replaced outputs. Seeds for incremental re-matching.
  std::vector<NodeId> touched;
};

struct RewriteOutcome {
  std::optional<Rewrite> rewrite;
  std::string declined;  // why the match could not be applied, when `rewrite` is empty
};

// The RHS is built on the bound ports with shapes inferred by `catalog`; the match is declined
// when the RHS is ill-typed there, when its output shapes (dims and degrees) differ from those it
// replaces, or when the replacement would make the graph cyclic. Nodes outside the match keep
// their ids' relative order, names and machine views. Weights the RHS leaves to one operator that
// only rearranges them are folded into one (fold_inserted_weights).
RewriteOutcome apply_match(const Graph& graph, const Rule& rule, const Match& match, const OpCatalog& catalog);

}  // namespace loom::pcg

#pragma once
// Unity's first search level: best-first search over the graphs that rule applications reach,
// keeping every graph within alpha times the best cost found, within a budget.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/plan.hpp"

namespace loom::search {

struct SearchOptions {
  double alpha = 1.05;       // keep exploring graphs up to alpha x the best cost
  std::size_t budget = 500;  // graphs costed in full (beyond the start), each by `cost`
  double max_seconds = 0;    // wall-clock limit; 0 for none
  // A rewrite waits in the queue with an estimate, its parent's cost plus the change in the summed
  // `node_seconds` of the nodes it replaces and inserts, and is costed in full only when its turn
  // comes; so a large library costs little more than a small one. Without it, the estimate is
  // the parent's cost.
  std::function<double(const pcg::Graph&, const pcg::Node&)> node_seconds;
};

struct SearchStep {
  std::size_t explored = 0;
  double best_seconds = 0;
};

struct SearchResult {
  pcg::Graph best;
  double initial_seconds = 0;
  double best_seconds = 0;
  std::vector<AppliedSubstitution> sequence;  // the substitutions from the start to the best graph
  std::size_t explored = 0;                   // graphs expanded
  std::size_t generated = 0;                  // distinct graphs costed in full, the start included
  std::size_t rewrites = 0;                   // distinct graphs the rules reached, the start included
};

// `cost` gives a graph's simulated iteration time (infinity for a graph that cannot run, e.g.
// one that does not fit in memory). `progress`, when given, is called after each expansion. The
// queue keeps no more graphs than the budget can still cost.
SearchResult search_substitutions(const pcg::Graph& start, const std::vector<pcg::Rule>& rules, const pcg::OpCatalog& catalog,
                                  const std::function<double(const pcg::Graph&)>& cost, const SearchOptions& options = {},
                                  const std::function<void(const SearchStep&)>& progress = {});

}  // namespace loom::search

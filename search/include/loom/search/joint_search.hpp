#pragma once
// Unity's hierarchical search (section 5): substitutions chosen by best-first search (level 1),
// each candidate graph costed by the machine-mapping DP (level 2), large graphs searched segment
// by segment (level 3); the best graph is then mapped once more as a whole.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/machine_mapping.hpp"
#include "loom/search/substitution_search.hpp"

namespace loom::search {

struct JointOptions {
  SearchOptions substitution;  // per segment
  MappingOptions mapping;
  bool split = true;             // level 3 (--no-split turns it off)
  std::size_t min_segment = 10;  // operators per segment at least (k)
  // Threads searching segments at once, each costing with a model and a mapper of its own (their
  // caches, and so the memory they hold, grow with the threads): the result is the same with any
  // number, unless max_seconds bounds the search. Where the model measures tasks
  // (CostModel::measures()), one. With more than one, substitution.node_seconds and mapping.admit
  // are called from several threads at once, and the progress callback from any of them, one
  // call at a time.
  int jobs = 1;
};

struct JointProgress {
  std::size_t segment = 0, segments = 0;
  std::size_t explored = 0;
};

struct JointResult {
  pcg::Graph graph;                   // the rewritten graph, unsplit
  std::vector<Placement> placements;  // its mapping, per node id
  double estimate = 0;                // the DP's objective for it
  std::vector<AppliedSubstitution> sequence;
  std::vector<std::string> cuts;  // per cut between segments: the partitioning chosen for the value crossing it
  std::size_t segments = 0, explored = 0, generated = 0, rewrites = 0;
  MappingStats mapping;
};

// How a value may cross a cut between segments (Unity's graph splitting keeps replica degree 1
// there): whole on device 0, or split along its first or last dimension by one of `degrees`.
std::vector<Pin> cut_partitionings(const pcg::ParallelShape& value, const std::vector<std::int64_t>& degrees);

// Large graphs are searched segment by segment with an explicit search over the partitioning of
// each value crossing a cut: every segment is searched once per partitioning of the values
// entering and leaving it, and the cheapest chain of choices is kept (Viterbi over the cuts).
// Only algebraic and hybrid rules are searched: splitting single operators is the DP's choice,
// over every degree the machine takes (parallel rules fix one degree, one operator at a time).
JointResult joint_search(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules, const CostModel& model,
                         const JointOptions& options = {}, const std::function<void(const JointProgress&)>& progress = {});

}  // namespace loom::search

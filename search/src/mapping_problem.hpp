#pragma once
// The machine mapper's state: the choices of every kind of node and the sub-results shared across
// graphs, and the graph being mapped with its problem tree and the choices decided so far. The
// dynamic program (machine_mapping.cpp) and the exhaustive search of the same choices
// (mapping_brute_force.cpp) work on it alike.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "loom/search/machine_mapping.hpp"
#include "mapping_choices.hpp"
#include "mapping_costs.hpp"
#include "mapping_memo.hpp"
#include "mapping_tree.hpp"

namespace loom::search {
namespace mapping {

// How the costs of parts add up: parts on the same devices run one after the other, parts on
// divided devices side by side.
inline double one_after_another(double a, double b) { return a + b; }
inline double side_by_side(double a, double b) { return std::max(a, b); }

// The part sizes of a block of `count` devices divided in two: into halves, thirds or quarters.
std::vector<int> split_sizes_of(int count);

// The choices of a kind of node on a block of devices under a memory scale.
struct ChoicesKey {
  int kind = 0;
  int first = 0, count = 0;
  std::uint64_t memory_scale = 0;  // the double's bits

  bool operator==(const ChoicesKey&) const = default;
};

struct ChoicesKeyHash {
  std::size_t operator()(const ChoicesKey& k) const;
};

}  // namespace mapping

struct MachineMapper::Impl {
  using Choice = mapping::Choice;
  using ConfigInfo = mapping::ConfigInfo;
  using Resource = mapping::Resource;
  using Tree = mapping::Tree;

  Impl(const spec::Library& library, const CostModel& model, MappingOptions options);

  const spec::Library& library;
  const CostModel& model;
  const Machine& machine;
  MappingOptions options;
  MappingStats stats;

  // Shared across graphs.
  mapping::MoveCosts moves;
  mapping::ConfigTable config_table;
  mapping::TreeContents contents;
  mapping::Memo memo;
  std::unordered_map<mapping::ChoicesKey, std::vector<Choice>, mapping::ChoicesKeyHash> choices_of;

  // The graph being mapped.
  mapping::MappedGraph g;
  std::vector<const std::vector<ConfigInfo>*> configs;  // per node id (decision nodes)
  std::vector<Choice> fixed;                            // per node id; config -1 when not decided
  std::vector<Tree> trees;
  double memory_scale = 1;  // device capacity over the unsplit graph's need, when below 1
  // The node whose backward ends the pass on its devices, where the graph holds the start of the
  // pass (no input stands for another segment's value): the first in graph order that runs one.
  // Its weights' sums have nothing left to run beside. No node's id where there is none or it is
  // unknown.
  int ends_backward = -1;

  // Sets up `graph` for mapping; returns its root tree, -1 when it has no decision node.
  int prepare(const pcg::Graph& graph, const Pins& pinned);

  // The node's choices on the devices of `r` (kept per kind of node: nodes of a kind share them).
  const std::vector<Choice>& choices(int node, Resource r);
  double memory_limit(const std::vector<ConfigInfo>& list) const;
  const ConfigInfo& info(int node, Choice c) const {
    return (*configs[static_cast<std::size_t>(node)])[static_cast<std::size_t>(c.config)];
  }
  // The node's own time plus every edge to a node decided before it.
  double leaf_cost(int node, Choice c);

  // The dynamic program.
  double solve(int index, Resource r);
  double solve_parts(const Tree& t, std::size_t k, Resource r, std::vector<int>& sizes);
  Choice best_alone(int node, const std::vector<Choice>& among);
  void reconstruct(int index, Resource r, std::vector<Choice>& out);
  // The tree's sub-problem on `r` given the decided nodes; its boundary is kept in
  // scratch_boundary, which the next call overwrites.
  mapping::SubProblem sub_problem(const Tree& t, Resource r);
  std::vector<int> scratch_boundary;

  // Every choice of every node and every division of devices, with `done` called on the
  // objective of each complete combination.
  void enumerate(int index, Resource r, const std::function<void(double)>& done, double so_far);
  struct Pending {
    int index;
    Resource r;
  };
  void enumerate_list(std::vector<Pending> todo, const std::function<void(double)>& done, double so_far);
  void enumerate_parts(const Tree& t, std::size_t k, Resource r, const std::vector<Pending>& todo, const std::function<void(double)>& done,
                       double so_far);
  void enumerate_rest(const Tree& t, std::size_t k, Resource r, const std::function<void(double)>& done, double so_far);

  // What the chosen tasks keep on the device that keeps the most: every output piece, and every
  // weight piece with its gradient and optimizer state. A lower bound of the plan's memory (which
  // also holds the pieces its layout changes make), cheap enough to rule a mapping out.
  double fullest_device_bytes(const std::vector<Choice>& chosen) const;
  // Whether the plan the placements make fits every device, as the simulated plan's memory counts.
  bool fits(const pcg::Graph& graph, const std::vector<Placement>& placements) const;
  Mapping result(const pcg::Graph& graph, const std::vector<Choice>& chosen, double estimate) const;
};

}  // namespace loom::search

#pragma once
// Unity's second search level: for a graph of operators, choose how each one is split and which
// devices run it, by dynamic programming over the graph's sequence splits (a node every path
// crosses) and parallel splits (parts with no edge between them, run one after the other on the
// same devices or side by side on a division of them). Sub-results are cached by content, so
// graphs that share parts (the candidates of the substitution search) share their work.
//
// The objective is additive: each operator's compute time (forward and backward) plus, on every
// edge, the time to move the value from the shape and devices its producer gives to those its
// consumer needs; for a weight copied to several devices, the part of its gradient sum that the
// reader's own backward does not hide; parts that run side by side on divided devices count as
// the slower of them.
// Each edge is charged to the endpoint decided later, so the DP and the exhaustive search of the
// same choices (brute_force) compute one and the same function (where every split is solved
// exactly: see max_boundary).
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/materialize.hpp"

namespace loom::search {

struct MappingOptions {
  std::vector<std::int64_t> degrees;  // split degrees tried; empty: mapping_degrees(machine)
  std::size_t max_views = 2;          // device offsets tried per split (aligned to its task count)
  bool share_cache = true;            // keep sub-results from one graph to the next
  // A sequence split is solved exactly when at most this many decided nodes border its part;
  // beyond that (graphs far from series-parallel, e.g. attention over all encoder steps) the
  // split node takes its best choice given what is decided, so the work stays linear.
  std::size_t max_boundary = 3;
  // When given, only the splits it admits are tried (the unsplit operator always is).
  std::function<bool(const pcg::Node&, const ParallelConfig&)> admit;
};

// The default degrees on a machine: all its devices, a node's devices, and 2.
std::vector<std::int64_t> mapping_degrees(const Machine& machine);

// A value's shape and devices fixed from outside the graph being mapped: where a graph input
// arrives, or how a graph output must be delivered. Graph splitting pins the values that cross
// a cut, so each side is mapped for one partitioning of them.
struct Pin {
  pcg::ParallelShape shape;
  int first_device = 0;

  pcg::MachineView view() const { return pcg::MachineView::contiguous(first_device, shape.tasks()); }
  bool operator==(const Pin&) const = default;
};

struct Pins {
  std::map<pcg::NodeId, Pin> inputs;   // by graph input node id
  std::map<std::size_t, Pin> outputs;  // by position in the graph's output list
};

struct Mapping {
  std::vector<Placement> placements;                          // per node id
  double estimate = std::numeric_limits<double>::infinity();  // the objective, seconds
};

struct MappingStats {
  std::size_t solved = 0;      // sub-problems solved
  std::size_t cache_hits = 0;  // sub-problems found in the cache
};

class MachineMapper {
 public:
  MachineMapper(const spec::Library& library, const CostModel& model, MappingOptions options = {});
  ~MachineMapper();
  MachineMapper(const MachineMapper&) = delete;
  MachineMapper& operator=(const MachineMapper&) = delete;

  // The best placements of every node of `graph` on the whole machine. A pinned input costs the
  // move from its pin to each reader; a pinned output the move to its pin. Unpinned data inputs
  // arrive wherever their readers want them (each device loads its piece).
  Mapping map(const pcg::Graph& graph, const Pins& pins = {});
  // Every combination of the same choices tried one by one: for testing on small graphs.
  Mapping brute_force(const pcg::Graph& graph, const Pins& pins = {});

  const MappingStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::search

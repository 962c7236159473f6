#pragma once
// The simulated cost of running a graph on a machine: what the substitution search minimizes.
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/memory.hpp"

namespace loom::search {

// The graph with a machine view on every node that lacks one: its tasks on devices 0, 1, ...
// Throws LoomError naming a node with more tasks than the machine has devices.
pcg::Graph with_default_views(const pcg::Graph& graph, const Machine& machine);

struct PlanCost {
  double seconds = 0;        // simulated iteration time
  int overfull_device = -1;  // a device whose memory is exceeded, or -1
  double fullest_bytes = 0;  // bytes needed on the fullest device
  bool fits() const { return overfull_device < 0; }
};

// Bytes each device keeps for one iteration of a graph whose nodes all have machine views, weights
// held as the pieces their parallelization operators make. `activation_copies`, when given, says
// per device how many copies of its activations it keeps (a pipeline stage's micro-batches in flight);
// `recomputed`, the operators whose outputs are not kept between the passes; `activations_only`:
// what the passes make, without inputs and weights (MemoryOptions); `trace`, when given, receives the
// walk's steps (MemoryOptions::trace).
std::vector<double> plan_memory(const pcg::Graph& graph, const CostModel& model, std::vector<double> activation_copies = {},
                                std::vector<pcg::NodeId> recomputed = {}, bool activations_only = false,
                                std::vector<MemoryStep>* trace = nullptr);

// Simulates one training iteration of a graph whose nodes all have machine views.
PlanCost plan_cost(const pcg::Graph& graph, const CostModel& model);

// What the substitution search minimizes: the simulated iteration time with default views, or
// infinity for a graph that needs more devices than the machine has or does not fit in memory.
double search_cost(const pcg::Graph& graph, const CostModel& model);

}  // namespace loom::search

#include "loom/search/plan_cost.hpp"

#include <limits>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::search {

pcg::Graph with_default_views(const pcg::Graph& graph, const Machine& machine) {
  pcg::Graph out = graph;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.view) continue;
    if (n.tasks() > machine.devices())
      throw LoomError(n.describe() + " runs as " + std::to_string(n.tasks()) + " tasks, but " + machine.name + " has " +
                      std::to_string(machine.devices()) + " devices");
    out.set_view(n.id, pcg::MachineView::contiguous(0, n.tasks()));
  }
  return out;
}

std::vector<double> plan_memory(const pcg::Graph& graph, const CostModel& model, std::vector<double> activation_copies,
                                std::vector<pcg::NodeId> recomputed, bool activations_only, std::vector<MemoryStep>* trace) {
  MemoryOptions memory;
  memory.trace = trace;
  memory.activations_only = activations_only;
  memory.activation_copies = std::move(activation_copies);
  memory.recomputed = std::move(recomputed);
  memory.moves_data = [&](const pcg::Node& n) { return !n.is_graph_input() && !model.is_compute(n); };
  memory.layout_changes = layout_changes_as_run(graph, model);
  memory.trained = model.trained_in(graph);
  memory.detached = model.detached_inputs();
  return memory_per_device(graph, model.machine(), memory);
}

PlanCost plan_cost(const pcg::Graph& graph, const CostModel& model) {
  PlanCost cost;
  cost.seconds = simulate(build_task_graph(graph, model)).makespan;
  const std::vector<double> bytes = plan_memory(graph, model);
  cost.overfull_device = first_overfull_device(bytes, model.machine());
  cost.fullest_bytes = fullest_device_bytes(bytes);
  return cost;
}

double search_cost(const pcg::Graph& graph, const CostModel& model) {
  for (const pcg::Node& n : graph.nodes())
    if (!n.view && n.tasks() > model.machine().devices()) return std::numeric_limits<double>::infinity();
  const PlanCost cost = plan_cost(with_default_views(graph, model.machine()), model);
  return cost.fits() ? cost.seconds : std::numeric_limits<double>::infinity();
}

}  // namespace loom::search

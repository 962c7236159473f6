#include "loom/search/task_graph.hpp"

#include "task_graph_plan.hpp"

namespace loom::search {

TaskGraph build_task_graph(const pcg::Graph& graph, const CostModel& model, RunWork run_work, GradientSums sums) {
  const PlanLayout plan(graph, model);
  TaskGraph out;
  out.devices = model.machine().devices();
  out.ports = model.machine().network_ports();
  out.drift = model.machine().device.drift;
  const WeightReaders readers = add_forward_tasks(plan, run_work, out);
  add_backward_tasks(plan, readers, sums, out);
  return out;
}

std::vector<pcg::PortRef> layout_change_sources(const pcg::Graph& graph, const CostModel& model) {
  return layout_changes_as_run(graph, model).source;
}

std::map<pcg::NodeId, std::map<int, std::vector<pcg::Region>>> weight_update_boxes(const pcg::Graph& graph, const CostModel& model) {
  const PlanLayout plan(graph, model);
  std::map<pcg::NodeId, std::map<int, std::vector<pcg::Region>>> out;
  for (const auto& [weight, reads] : plan.weight_reads())
    for (const pcg::GradientShare& share : plan.shares_of(weight, reads))
      for (int d : share.devices) out[weight][d].push_back(share.box);
  return out;
}

double communication_bytes(const TaskGraph& graph) {
  double bytes = 0;
  for (const SimTask& t : graph.tasks)
    if (t.kind == TaskKind::Communication) bytes += t.bytes;
  return bytes;
}

}  // namespace loom::search

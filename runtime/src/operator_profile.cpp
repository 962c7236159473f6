#include "loom/runtime/operator_profile.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::runtime {

std::vector<OperatorProfile> operator_profiles(const spec::Library& library, const pcg::Graph& graph, const search::Machine& machine,
                                               const std::vector<OperatorTime>& times) {
  if (times.size() != graph.size())
    throw LoomError("operator profiles: " + std::to_string(times.size()) + " operator times for a graph of " + std::to_string(graph.size()) +
                    " nodes");
  const search::CostModel roofline(library, machine);
  const std::vector<pcg::PortRef> sources = search::layout_change_sources(graph, roofline);
  std::vector<OperatorProfile> out;
  for (const pcg::Node& n : graph.nodes()) {
    const OperatorTime& t = times[static_cast<std::size_t>(n.id)];
    if (t.forward_tasks == 0 || n.is_graph_input()) continue;
    OperatorProfile p;
    p.node = n.id;
    p.op = n.op;
    if (roofline.is_compute(n)) {
      p.key = search::ProfileKey{n.op, n.attrs, {}, machine.device.kind};
      for (pcg::PortRef in : n.inputs) p.key.inputs.push_back(graph.shape_of(in));
      p.simulated_seconds = roofline.compute(n, p.key.inputs).seconds;
    } else {
      p.key = search::layout_change_key(graph.shape_of(sources[static_cast<std::size_t>(n.id)]), n.output_shapes.at(0), machine.device.kind);
    }
    p.measured_seconds = t.forward_per_task();
    p.tasks = t.forward_tasks;
    p.backward_seconds = t.backward_per_task();
    p.backward_tasks = t.backward_tasks;
    out.push_back(std::move(p));
  }
  return out;
}

void record_profiles(const std::vector<OperatorProfile>& profiles, search::ProfileDatabase& database) {
  for (const OperatorProfile& p : profiles) {
    // A kernel too fast for the clock to see still took time: at least the clock's nanosecond.
    database.record(p.key, std::max(p.measured_seconds, 1e-9), p.simulated_seconds, p.tasks);
    if (p.backward_tasks > 0) database.record_backward(p.key, std::max(p.backward_seconds, 1e-9), p.backward_tasks);
  }
}

}  // namespace loom::runtime

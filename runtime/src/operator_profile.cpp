#include "loom/runtime/operator_profile.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::runtime {

namespace {

// The extent of the box each device updating a weight updates, when each updates one box and all
// are alike.
std::optional<std::vector<std::int64_t>> common_update_box(const std::map<int, std::vector<pcg::Region>>& boxes_by_device) {
  std::optional<std::vector<std::int64_t>> extent;
  for (const auto& [device, boxes] : boxes_by_device) {
    if (boxes.size() != 1 || (extent && *extent != boxes.front().extent())) return std::nullopt;
    extent = boxes.front().extent();
  }
  return extent;
}

// The profile of weight `n`'s updates `t`, where the box it is keyed by is known.
std::optional<OperatorProfile> update_profile(const pcg::Node& n, const OperatorTime& t, const search::CostModel& roofline,
                                              const std::map<pcg::NodeId, std::map<int, std::vector<pcg::Region>>>& update_boxes,
                                              const std::string& optimizer, int processes) {
  const std::vector<std::int64_t>& whole = n.output_shapes.at(0).dims;
  std::optional<std::vector<std::int64_t>> box = whole;
  if (processes > 1) {
    const auto it = update_boxes.find(n.id);
    box = it == update_boxes.end() ? std::nullopt : common_update_box(it->second);
  }
  if (!box) return std::nullopt;
  OperatorProfile p;
  p.node = n.id;
  p.key = search::weight_update_key(optimizer, *box, whole, roofline.machine().device.kind);
  p.op = p.key.op;
  p.measured_seconds = t.update_seconds / static_cast<double>(t.updates);
  p.simulated_seconds = roofline.weight_update(*box, whole).seconds;
  p.tasks = t.updates;
  return p;
}

}  // namespace

std::vector<OperatorProfile> operator_profiles(const spec::Library& library, const pcg::Graph& graph, const search::Machine& machine,
                                               const std::vector<OperatorTime>& times, const std::string& optimizer, int processes,
                                               const std::set<std::string>& fixed) {
  if (times.size() != graph.size())
    throw LoomError("operator profiles: " + std::to_string(times.size()) + " operator times for a graph of " +
                    std::to_string(graph.size()) + " nodes");
  search::CostModel roofline(library, machine, nullptr, optimizer);
  roofline.keep_fixed(fixed);
  const std::vector<pcg::PortRef> sources = search::layout_change_sources(graph, roofline);
  const auto update_boxes = search::weight_update_boxes(graph, roofline);
  std::vector<OperatorProfile> out;
  for (const pcg::Node& n : graph.nodes()) {
    const OperatorTime& t = times[n.id.index()];
    if (t.updates > 0)
      if (auto p = update_profile(n, t, roofline, update_boxes, optimizer, processes)) out.push_back(std::move(*p));
    if (t.forward_tasks == 0 || n.is_graph_input()) continue;
    OperatorProfile p;
    p.node = n.id;
    p.op = n.op;
    if (roofline.is_compute(n)) {
      std::vector<pcg::ParallelShape> inputs;
      for (pcg::PortRef in : n.inputs) inputs.push_back(graph.shape_of(in));
      const std::vector<bool> gradients = roofline.gradient_inputs(graph, n);
      p.key = search::task_key(n.op, n.attrs, inputs, gradients, machine.device.kind);
      p.simulated_seconds = roofline.compute(n, inputs, gradients).seconds;
    } else {
      // One process runs each layout change of a chain by itself: it fuses none.
      const pcg::PortRef from = processes > 1 ? sources[n.id.index()] : n.inputs.at(0);
      p.key = search::layout_change_key(graph.shape_of(from), n.output_shapes.at(0), graph.node(from.node).is_graph_input(),
                                        t.backward_tasks > 0, machine.device.kind);
    }
    p.measured_seconds = t.forward_per_task();
    p.tasks = t.forward_tasks;
    p.backward_seconds = t.backward_per_task();
    p.backward_tasks = t.backward_tasks;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<OperatorTime> summed_over_processes(const std::vector<OperatorTime>& mine, Transport& transport) {
  constexpr std::size_t kFigures = 6;
  std::vector<double> flat;
  for (const OperatorTime& t : mine)
    flat.insert(flat.end(), {t.forward_seconds, t.backward_seconds, static_cast<double>(t.forward_tasks),
                             static_cast<double>(t.backward_tasks), t.update_seconds, static_cast<double>(t.updates)});
  transport.sum(flat);
  std::vector<OperatorTime> out(mine.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double* f = &flat[kFigures * i];
    out[i] = {f[0], f[1], std::llround(f[2]), std::llround(f[3]), f[4], std::llround(f[5])};
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

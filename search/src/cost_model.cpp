#include "loom/search/cost_model.hpp"

#include <algorithm>

namespace loom::search {

TaskEstimate CostModel::compute(const pcg::Graph& graph, const pcg::Node& node) const {
  std::vector<pcg::ParallelShape> inputs;
  for (pcg::PortRef in : node.inputs) inputs.push_back(graph.shape_of(in));
  return compute(node, inputs);
}

TaskEstimate CostModel::compute(const pcg::Node& node, const std::vector<pcg::ParallelShape>& inputs) const {
  TaskEstimate est;
  if (!is_compute(node)) return est;
  const pcg::TaskCost cost = library_.task_cost(node.op, node.attrs, inputs);
  est.flops = cost.flops;
  est.bytes = cost.bytes_read + cost.bytes_written;
  if (profiles_) {
    if (const ProfileEntry* measured = profiles_->find(ProfileKey{node.op, node.attrs, inputs, machine_.device.kind})) {
      est.seconds = measured->measured_seconds + machine_.device.dispatch_overhead;
      est.backward_seconds = measured->backward_seconds.value_or(2 * measured->measured_seconds) + machine_.device.dispatch_overhead;
      est.measured = true;
      return est;
    }
  }
  const DeviceSpec& d = machine_.device;
  const double kernel = std::max(est.flops / d.peak_flops, est.bytes / d.memory_bandwidth) + d.kernel_overhead;
  est.seconds = kernel + d.dispatch_overhead;
  est.backward_seconds = 2 * kernel + d.dispatch_overhead;
  return est;
}

std::optional<TaskEstimate> CostModel::measured_layout_change(const pcg::ParallelShape& from, const pcg::ParallelShape& to) const {
  if (!profiles_) return std::nullopt;
  const ProfileEntry* measured = profiles_->find(layout_change_key(from, to, machine_.device.kind));
  if (!measured) return std::nullopt;
  TaskEstimate est;
  est.seconds = measured->measured_seconds;
  est.backward_seconds = measured->backward_seconds.value_or(measured->measured_seconds);
  est.measured = true;
  return est;
}

}  // namespace loom::search

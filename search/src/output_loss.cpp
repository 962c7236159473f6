#include "loom/search/output_loss.hpp"

#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/task_layout.hpp"

namespace loom::search {

bool output_is_probabilities(const spec::Library& library, const pcg::Graph& graph) {
  // The operator that computed the output, behind the parallel operators that assembled it.
  pcg::PortRef made = graph.outputs().front();
  while (!graph.node(made.node).inputs.empty() &&
         (library.find_parallel(graph.node(made.node).op) || library.find_fused(graph.node(made.node).op)))
    made = graph.node(made.node).inputs.front();
  const spec::OpDecl* producer = library.find_op(graph.node(made.node).op);
  const auto port = static_cast<std::size_t>(made.port);
  return producer && port < producer->outputs.size() && producer->outputs[port].noted("probabilities");
}

LossKind loss_from_name(const std::string& name) {
  if (name == "mse") return LossKind::MeanSquaredError;
  if (name == "cross-entropy") return LossKind::CrossEntropy;
  throw LoomError("unknown loss '" + name + "' (expected mse or cross-entropy)");
}

std::string loss_name(LossKind kind) { return kind == LossKind::MeanSquaredError ? "mse" : "cross-entropy"; }

bool shares_row_statistics(LossKind loss, const pcg::ParallelShape& held, bool probabilities) {
  return loss == LossKind::CrossEntropy && !probabilities && !held.D.empty() && held.D.back() > 1;
}

std::vector<RowStatisticsGroup> row_statistics_groups(const pcg::ParallelShape& held, const std::vector<int>& device_of_task) {
  if (static_cast<std::int64_t>(device_of_task.size()) != held.tasks())
    throw LoomError("row_statistics_groups: " + std::to_string(device_of_task.size()) + " devices for the " + std::to_string(held.tasks()) +
                    " tasks of " + held.to_string());
  std::map<pcg::Region, std::set<int>> devices_of;  // by rows
  for (std::int64_t t = 0; t < held.tasks(); ++t) {
    if (pcg::task_piece(held, t).replica != 0) continue;
    pcg::Region rows = pcg::piece_region(held, t);
    if (!rows.lo.empty()) {
      rows.lo.pop_back();
      rows.hi.pop_back();
    }
    devices_of[rows].insert(device_of_task[static_cast<std::size_t>(t)]);
  }
  std::vector<RowStatisticsGroup> groups;
  for (const auto& [rows, devices] : devices_of)
    if (devices.size() > 1) groups.push_back({rows, {devices.begin(), devices.end()}});
  return groups;
}

std::int64_t output_rows(const std::vector<std::int64_t>& dims) {
  if (dims.empty()) return 1;
  return std::accumulate(dims.begin(), dims.end() - 1, std::int64_t{1}, std::multiplies<>());
}

}  // namespace loom::search

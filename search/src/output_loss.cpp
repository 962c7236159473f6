#include "loom/search/output_loss.hpp"

#include <functional>
#include <numeric>

#include "loom/pcg/diagnostic.hpp"

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

std::int64_t output_rows(const std::vector<std::int64_t>& dims) {
  if (dims.empty()) return 1;
  return std::accumulate(dims.begin(), dims.end() - 1, std::int64_t{1}, std::multiplies<>());
}

}  // namespace loom::search

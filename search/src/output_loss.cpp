#include "loom/search/output_loss.hpp"

#include <functional>
#include <numeric>

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

bool cross_entropy_shares_row_statistics(const pcg::ParallelShape& held, bool probabilities) {
  return !probabilities && !held.D.empty() && held.D.back() > 1;
}

std::int64_t output_rows(const std::vector<std::int64_t>& dims) {
  if (dims.empty()) return 1;
  return std::accumulate(dims.begin(), dims.end() - 1, std::int64_t{1}, std::multiplies<>());
}

}  // namespace loom::search

#include "loom/models/model_stats.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "loom/interpreter/cost.hpp"
#include "loom/interpreter/input_notes.hpp"

namespace loom::models {
namespace {

// A use at an input that the reader's spec notes `@statistic` (batch normalization's running mean
// and variance).
bool is_statistic_use(const spec::Library& library, const pcg::Graph& graph, pcg::Use use) {
  const spec::InputParam* declared =
      use.input < 0 ? nullptr : spec::declared_input(library, graph.node(use.node).op, static_cast<std::size_t>(use.input));
  return declared && declared->note("statistic");
}

}  // namespace

ModelStats model_stats(const pcg::Graph& graph, const spec::Library& library) {
  ModelStats stats;
  stats.nodes = graph.size();
  // Every use of every port, gathered in one pass.
  std::map<pcg::PortRef, std::vector<pcg::Use>> uses;
  for (const pcg::Node& n : graph.nodes()) {
    for (std::size_t i = 0; i < n.inputs.size(); ++i) uses[n.inputs[i]].push_back({n.id, static_cast<int>(i)});
  }
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op == pcg::kInputOp) {
      ++stats.inputs;
      continue;
    }
    if (n.op == pcg::kWeightOp) {
      ++stats.weights;
      const auto& readers = uses[{n.id, 0}];
      const bool statistic =
          !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](pcg::Use u) { return is_statistic_use(library, graph, u); });
      (statistic ? stats.statistics : stats.parameters) += n.output_shapes.front().elements();
      continue;
    }
    ++stats.operators;
    ++stats.operators_by_type[n.op];
    if (!library.find_op(n.op)) continue;  // parallel and fused forms move data, they compute nothing
    std::vector<std::vector<std::int64_t>> dims;
    for (const pcg::PortRef in : n.inputs) dims.push_back(graph.shape_of(in).dims);
    stats.forward_flops += spec::total_flops(library.instantiate(n.op, n.attrs, dims));
  }
  return stats;
}

void to_json(nlohmann::json& j, const ModelStats& stats) {
  j = {{"nodes", stats.nodes},
       {"operators", stats.operators},
       {"operators_by_type", stats.operators_by_type},
       {"inputs", stats.inputs},
       {"weights", stats.weights},
       {"parameters", stats.parameters},
       {"statistics", stats.statistics},
       {"forward_flops", stats.forward_flops},
       {"iteration_flops", stats.iteration_flops()}};
}

}  // namespace loom::models

#pragma once
// What `loom show --model` reports about a graph: operators by type, parameters and FLOPs.
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::models {

struct ModelStats {
  std::size_t nodes = 0;      // every node, graph inputs and weights included
  std::size_t operators = 0;  // nodes that compute (neither inputs nor weights)
  std::map<std::string, std::size_t> operators_by_type;
  std::size_t inputs = 0;
  std::size_t weights = 0;
  // Elements of the trainable weights. Batch-norm running means and variances are weights of the
  // graph too, but state rather than parameters: they are counted apart, as `statistics`.
  std::int64_t parameters = 0;
  std::int64_t statistics = 0;
  // Arithmetic of one forward pass, counted from the operators' comprehensions.
  double forward_flops = 0;
  // A training iteration: forward plus backward, the backward taken as twice the forward.
  double iteration_flops() const { return 3 * forward_flops; }
};

ModelStats model_stats(const pcg::Graph& graph, const spec::Library& library);

void to_json(nlohmann::json& j, const ModelStats& stats);

}  // namespace loom::models

#include "loom/models/values.hpp"

#include <algorithm>
#include <random>

namespace loom::models {
namespace {

bool is_lookup(const std::string& op) { return op == "embedding" || op == "embedding_bag" || op == "gather_rows"; }

}  // namespace

NamedValues random_values(const pcg::Graph& graph, std::uint64_t seed, NamedValues given) {
  // Rows of the smallest table each id input indexes, and which inputs are variances.
  std::map<int, std::int64_t> id_rows;
  std::map<int, bool> variance;
  for (const pcg::Node& n : graph.nodes()) {
    if (is_lookup(n.op)) {
      const int ids = n.inputs.at(0).node;
      const std::int64_t rows = graph.shape_of(n.inputs.at(1)).dims.at(0);
      auto [it, fresh] = id_rows.emplace(ids, rows);
      if (!fresh) it->second = std::min(it->second, rows);
    }
    if (n.op == "batchnorm") variance[n.inputs.at(4).node] = true;
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (const pcg::Node& n : graph.nodes()) {
    if (!n.is_graph_input() || given.count(n.name)) continue;
    TensorValue t(n.output_shapes.front().dims);
    for (double& v : t.data) {
      if (auto rows = id_rows.find(n.id); rows != id_rows.end()) {
        v = static_cast<double>(rng() % static_cast<std::uint64_t>(rows->second));
      } else if (variance.count(n.id)) {
        v = 1.0 + 0.5 * uniform(rng);
      } else {
        v = uniform(rng);
      }
    }
    given.emplace(n.name, std::move(t));
  }
  return given;
}

}  // namespace loom::models

#include "loom/models/values.hpp"

#include <algorithm>
#include <random>

#include "loom/interpreter/input_notes.hpp"

namespace loom::models {

NamedValues random_values(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed, NamedValues given) {
  // Rows of the smallest table each id input indexes, and which inputs must be positive, as the
  // notes of their readers' specs say.
  std::map<int, std::int64_t> id_rows;
  std::map<int, bool> positive;
  for (const pcg::Node& n : graph.nodes()) {
    const spec::OpDecl* op = n.is_graph_input() ? nullptr : library.find_op(n.op);
    if (!op) continue;
    for (std::size_t i = 0; i < n.inputs.size() && i < op->inputs.size(); ++i) {
      const spec::InputParam& declared = op->inputs[i];
      if (declared.note("positive")) positive[n.inputs[i].node] = true;
      const std::optional<std::size_t> table = spec::indexed_table(*op, declared);
      if (!table || *table >= n.inputs.size()) continue;
      const std::int64_t rows = graph.shape_of(n.inputs[*table]).dims.at(0);
      auto [it, fresh] = id_rows.emplace(n.inputs[i].node, rows);
      if (!fresh) it->second = std::min(it->second, rows);
    }
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (const pcg::Node& n : graph.nodes()) {
    if (!n.is_graph_input() || given.count(n.name)) continue;
    TensorValue t(n.output_shapes.front().dims);
    for (double& v : t.data) {
      if (auto rows = id_rows.find(n.id); rows != id_rows.end()) {
        v = static_cast<double>(rng() % static_cast<std::uint64_t>(rows->second));
      } else if (positive.count(n.id)) {
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

#include "loom/search/parallel_config.hpp"

#include <algorithm>

#include "loom/interpreter/parallel_rules.hpp"
#include "loom/pcg/diagnostic.hpp"

namespace loom::search {

std::int64_t ParallelConfig::degree() const { return tasks(); }

ParallelConfig unsplit_config(const pcg::Graph& graph, const pcg::Node& node) {
  ParallelConfig config;
  for (pcg::PortRef in : node.inputs) config.inputs.push_back(graph.shape_of(in));
  config.outputs = node.output_shapes;
  return config;
}

std::vector<ParallelConfig> node_configs(const spec::Library& library, const pcg::Graph& graph, const pcg::Node& node,
                                         const std::vector<std::int64_t>& degrees) {
  std::vector<ParallelConfig> configs{unsplit_config(graph, node)};
  if (!library.find_op(node.op) || node.tasks() != 1) return configs;
  for (const ParallelConfig& c : configs)
    for (const auto& s : c.inputs)
      if (s.tasks() != 1) return configs;  // only unsplit operators are split here
  std::vector<std::vector<std::int64_t>> dims;
  for (const auto& s : configs[0].inputs) dims.push_back(s.dims);
  const spec::Program program = library.instantiate(node.op, node.attrs, dims);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    for (std::size_t d = 0; d < dims[i].size(); ++d) {
      for (std::int64_t degree : degrees) {
        if (degree < 2 || dims[i][d] % degree != 0) continue;
        ParallelConfig c;
        c.inputs = spec::split_inputs(program, i, d, degree);
        if (std::any_of(configs.begin(), configs.end(), [&](const ParallelConfig& o) { return o.inputs == c.inputs; })) continue;
        try {
          c.outputs = library.infer(node.op, node.attrs, c.inputs);
        } catch (const LoomError&) {
          continue;  // the operator does not accept this split
        }
        c.split = "input " + std::to_string(i) + " dim " + std::to_string(d) + " / " + std::to_string(degree);
        configs.push_back(std::move(c));
      }
    }
  }
  return configs;
}

std::vector<std::int64_t> divisor_degrees(int devices) {
  std::vector<std::int64_t> out;
  for (int d = 2; d <= devices; ++d)
    if (devices % d == 0) out.push_back(d);
  return out;
}

}  // namespace loom::search

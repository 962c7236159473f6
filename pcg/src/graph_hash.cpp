#include "loom/pcg/graph_hash.hpp"

#include <functional>
#include <vector>

#include "loom/pcg/hash_mix.hpp"

namespace loom::pcg {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) { return hash_mix(h, v); }

std::uint64_t hash_text(const std::string& s) { return std::hash<std::string>{}(s); }

std::uint64_t hash_shape(const ParallelShape& s) { return std::hash<ParallelShape>{}(s); }

std::uint64_t hash_graph(const Graph& graph, bool input_names) {
  std::vector<std::uint64_t> node_hash(graph.size());
  for (const Node& n : graph.nodes()) {
    std::uint64_t h = hash_text(n.op);
    if (n.is_graph_input() && input_names) h = mix(h, hash_text(n.name));
    for (const auto& [k, v] : n.attrs) h = mix(mix(h, hash_text(k)), static_cast<std::uint64_t>(v));
    for (PortRef in : n.inputs) h = mix(mix(h, node_hash[in.node.index()]), static_cast<std::uint64_t>(in.port));
    for (const auto& s : n.output_shapes) h = mix(h, hash_shape(s));
    node_hash[n.id.index()] = h;
  }
  std::uint64_t h = mix(0, graph.outputs().size());
  for (PortRef out : graph.outputs()) h = mix(mix(h, node_hash[out.node.index()]), static_cast<std::uint64_t>(out.port));
  return h;
}

}  // namespace

std::uint64_t graph_hash(const Graph& graph) { return hash_graph(graph, true); }

std::uint64_t unnamed_graph_hash(const Graph& graph) { return hash_graph(graph, false); }

}  // namespace loom::pcg

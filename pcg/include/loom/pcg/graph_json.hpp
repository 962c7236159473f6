#pragma once
#include <nlohmann/json.hpp>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/op_catalog.hpp"

namespace loom::pcg {

// The stable, versioned file form of a graph:
//   {"format": "loom-pcg", "version": 1,
//    "nodes": [{"id", "op", "name", "attrs", "inputs": [{"node", "port"}], "output_shapes",
//               "view"?, "folded_from"?}, ...],
//    "outputs": [{"node", "port"}, ...]}
// Nodes are listed in creation order, so each reads only nodes listed before it. A folded weight's
// "folded_from" is the graph of its recipe (pcg::FoldRecipe) in this same form.
inline constexpr const char* kGraphFormat = "loom-pcg";
inline constexpr int kGraphFormatVersion = 1;

nlohmann::json graph_to_json(const Graph& graph);

// Rebuilds the graph, re-inferring every operator with `catalog`. Throws LoomError whose message
// names the JSON path of the problem, e.g. `nodes[3].inputs[1]: ...`. For operator nodes,
// "output_shapes" may be left out; when present it must match what the catalog infers. "id",
// "name", "attrs", "inputs" and "view" may also be left out.
Graph graph_from_json(const nlohmann::json& json, const OpCatalog& catalog);

}  // namespace loom::pcg

#pragma once
#include <string>

#include "loom/pcg/graph.hpp"

namespace loom::pcg {

// Graphviz DOT text for the graph: a box per operator (op, name, attributes, output shapes and
// devices), ellipses for inputs, cylinders for weights, a plain label per graph output. Edges are
// labelled with the parallel shape they carry; nodes with a machine view are filled with a color
// picked by their first device.
std::string graph_to_dot(const Graph& graph);

// `text` as the inside of a DOT double-quoted string, shown literally.
std::string dot_escape(const std::string& text);

}  // namespace loom::pcg

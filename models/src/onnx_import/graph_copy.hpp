#pragma once
// Rebuilding an imported graph with some nodes changed or left out.
#include <functional>

#include "loom/models/values.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::models::onnx_import {

// A copy of `graph` without the graph inputs `drop` names (nothing may still read them), each
// operator node passed through `change` first: it may rewrite the node's op, attributes and inputs
// (ports of `graph`), and must keep its output shapes.
pcg::Graph copy_graph(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& drop,
                      const std::function<void(pcg::Node&)>& change);

// `graph` without the constants (graph inputs `constants` gives values) that nothing reads; they
// are dropped from `constants` too.
pcg::Graph without_unread_constants(const pcg::Graph& graph, NamedValues& constants);

}  // namespace loom::models::onnx_import

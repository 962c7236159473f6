#pragma once
// Fusing an imported graph with proved rules: each applied left to right wherever it matches,
// until none does, its numbers matched against the model's constants.
#include <string>
#include <vector>

#include "loom/models/values.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::models::onnx_import {

// Rewrites `graph` in place; constants no operator reads any more are dropped from the graph and
// from `constants`. Returns one note per rule that fused something ("rule R fused N places").
std::vector<std::string> fuse_with_rules(pcg::Graph& graph, NamedValues& constants, const std::vector<pcg::Rule>& rules,
                                         const pcg::OpCatalog& catalog);

}  // namespace loom::models::onnx_import

#pragma once
// Weight folding. An operator whose inputs are all weights that nothing else reads, and whose one
// output holds each of their elements exactly once (a concatenation of weights that a merge rule
// made, say), computes nothing a weight could not hold: it is replaced by one weight, folded from
// those it read. Training the folded weight is training its parts: each element's gradient and
// update are the same, only where it is kept differs. So the plan concatenates nothing each step;
// the weight is made from its parts once, when training starts, and a checkpoint keeps the parts.
#include <string>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/rewrite.hpp"

namespace loom::pcg {

// Folds every node `rewrite` inserted that can be folded (above), which OpCatalog::
// moves_each_element_once tells; the rewrite's maps follow the nodes. A part that is itself folded
// is taken in by its recipe, so a recipe reads only weights of the model.
void fold_inserted_weights(Rewrite& rewrite, const OpCatalog& catalog);

// The graph with each folded weight replaced by its recipe: the weights it was folded from, and
// the operators making it from them. Weights are made and kept by their parts on this graph.
Graph unfolded(const Graph& graph);

// The names of the weights a folded weight is folded from, in its recipe's order; its own name
// for any other node.
std::vector<std::string> weight_parts(const Node& weight);

// Whether the graph has a folded weight.
bool has_folded_weights(const Graph& graph);

}  // namespace loom::pcg

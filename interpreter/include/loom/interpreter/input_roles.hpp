#pragma once
// What a graph input or weight is to the operators that read it, from the notes their specs put on
// those inputs (docs/language.md, "Input notes"): whether training updates a weight, and how its
// first values are made. Read behind the parallelization operators of a plan, so a weight has the
// same role in every plan. The runtime trains by it; the cost and memory models charge by it.
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::spec {

// The operators that read `port`, looking through parallelization and fused operators, which only
// move it.
std::vector<pcg::Use> compute_readers(const Library& library, const pcg::Graph& graph, pcg::PortRef port);

// The role of a graph input or weight, from the notes that the spec of the first operator reading
// it puts on that input: `@index` ids, `@statistic` or `@init` constants, else data or a matrix.
enum class InputRole { Data, LookupIds, Constant, Statistic, Matrix };
InputRole input_role(const Library& library, const pcg::Graph& graph, pcg::NodeId node);

// Whether training updates weight `node`: every weight except those the spec of their reader notes
// as `@statistic` (batch-norm running means and variances) or `@index` (lookup ids).
bool trained_weight(const Library& library, const pcg::Graph& graph, pcg::NodeId node);

// The names of the weights training updates (trained_weight).
std::set<std::string> trainable_weights(const Library& library, const pcg::Graph& graph);

// Whether input `slot` of `node` passes no gradient back: its spec notes it `@detached` (a
// stop-gradient, as AlphaFold2's recycling reads the pass before). Parallelization operators pass
// every gradient on.
bool detached_input(const Library& library, const pcg::Node& node, std::size_t slot);

// Whether any input of `op` is noted `@detached`: what it computes is the identity on values but
// not on gradients, so equalities of values (rules) do not hold of it in training.
bool detaches_gradient(const OpDecl& op);

}  // namespace loom::spec

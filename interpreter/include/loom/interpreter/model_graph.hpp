#pragma once
// A `model` declaration built into a graph at the sizes asked for.
#include <cstdint>
#include <map>
#include <string>

#include "loom/interpreter/ast.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::spec {

class Library;

using ModelSizes = std::map<std::string, std::int64_t>;

// Builds `model` over the library's forms, each size parameter at its value in `sizes` or at its
// default. Names declared inside `for i < n` are scoped `i0.`, `i1.`, ... per iteration.
// Throws LoomError at the place of the problem: a size the model does not declare (listing those
// it does), a requirement that does not hold, an unknown name or operator, a wrong number of
// arguments, shapes an operator refuses, a model without outputs.
pcg::Graph build_model_graph(const Library& library, const ModelDecl& model, const ModelSizes& sizes = {});

}  // namespace loom::spec

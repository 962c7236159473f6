#pragma once
// Binders at concrete values: a tensor variable at a parallel shape, an integer at one value.
#include <cstdint>
#include <string>

#include "loom/interpreter/ast.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::verifier {

spec::ExprPtr number_expr(std::int64_t value);

// `name: [dims] {D: [...], V: v, ...}` with the trivial degrees left out.
spec::Binder tensor_binder(const std::string& name, const pcg::ParallelShape& shape);

// `name: int in {value}`.
spec::Binder int_binder(const std::string& name, std::int64_t value);

}  // namespace loom::verifier

#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/interpreter/ast.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::spec {

// The integer names visible to a dimension expression, a `require`, an attribute argument or a
// parallel form's degree update.
struct IntScope {
  std::map<std::string, std::int64_t> values;              // attributes, dimension symbols, int binders
  std::map<std::string, std::vector<std::int64_t>> packs;  // rank packs: rank(p)
  const pcg::ParallelShape* input = nullptr;               // a parallel form's input: shape[e], D[e], V, ...
};

// Evaluates an integer expression; throws LoomError at the expression for an unknown name,
// a real literal, or a division by zero. `/` is floor division.
std::int64_t eval_int(const Expr& e, const IntScope& scope);

// Whether `name` occurs in the expression, as a name or a pack index.
bool expr_mentions(const Expr& e, const std::string& name);

// Appends the plain names the expression mentions (not pack indices), each once, in order of appearance.
void collect_names(const Expr& e, std::vector<std::string>& names);

// Renders an expression back as source text, for messages.
std::string expr_to_string(const Expr& e);

}  // namespace loom::spec

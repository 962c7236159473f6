#pragma once
// Evaluates terms (op, parallel-form and fused-form applications over variables), as written in
// axioms, rules and fused forms: each result is a logical value with its parallel shape.
#include <map>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/numeric.hpp"
#include "loom/interpreter/tensor.hpp"

namespace loom::spec {

template <class Domain>
struct TermValue {
  pcg::ParallelShape shape;
  Tensor<typename Domain::Value> value;  // empty when only shapes are computed
};

template <class Domain>
class TermEvaluator {
 public:
  using Bindings = std::map<std::string, TermValue<Domain>>;

  // With compute_values false only shapes and degrees are derived (type checking).
  explicit TermEvaluator(const Library& library, bool compute_values = true) : library_(library), compute_values_(compute_values) {}

  // Throws LoomError at the term for anything ill-typed.
  std::vector<TermValue<Domain>> eval(const Term& term, const Bindings& vars, const IntScope& ints) const;
  TermValue<Domain> eval_single(const Term& term, const Bindings& vars, const IntScope& ints) const;

 private:
  std::vector<TermValue<Domain>> apply(const Term& term, const Bindings& vars, const IntScope& ints) const;
  const Library& library_;
  bool compute_values_;
};

}  // namespace loom::spec

#include "loom/interpreter/term_eval.hpp"

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/parallel_rules.hpp"

namespace loom::spec {

template <class Domain>
TermValue<Domain> TermEvaluator<Domain>::eval_single(const Term& term, const Bindings& vars, const IntScope& ints) const {
  auto values = eval(term, vars, ints);
  if (values.size() != 1)
    throw LoomError({{term.loc, "'" + term.name + "' has " + std::to_string(values.size()) + " outputs; pick one with .0 or .name"}});
  return std::move(values[0]);
}

template <class Domain>
std::vector<TermValue<Domain>> TermEvaluator<Domain>::eval(const Term& term, const Bindings& vars, const IntScope& ints) const {
  switch (term.kind) {
    case TermKind::Var: {
      auto it = vars.find(term.name);
      if (it == vars.end()) throw LoomError({{term.loc, "unbound variable '" + term.name + "'"}});
      return {it->second};
    }
    case TermKind::Project: {
      auto values = eval(*term.args[0], vars, ints);
      const std::optional<std::size_t> picked = library_.projected_output(term.args[0]->name, term);
      if (!picked) throw LoomError({{term.loc, "no output named '" + term.field + "'"}});
      const std::size_t pick = *picked;
      if (pick >= values.size())
        throw LoomError(
            {{term.loc, "output " + std::to_string(pick) + " does not exist (there are " + std::to_string(values.size()) + ")"}});
      return {std::move(values[pick])};
    }
    case TermKind::Apply: return apply(term, vars, ints);
    case TermKind::Literal: {
      TermValue<Domain> literal{pcg::ParallelShape::unpartitioned({}), {}};
      if (compute_values_) literal.value = Tensor<typename Domain::Value>({}, Domain::from_real(term.value));
      return {std::move(literal)};
    }
    case TermKind::Tuple: {
      std::vector<TermValue<Domain>> out;
      for (const auto& part : term.args)
        for (auto& value : eval(*part, vars, ints)) out.push_back(std::move(value));
      return out;
    }
  }
  return {};
}

template <class Domain>
std::vector<TermValue<Domain>> TermEvaluator<Domain>::apply(const Term& term, const Bindings& vars, const IntScope& ints) const {
  const auto* params = library_.attr_params(term.name);
  if (!params) throw LoomError({{term.loc, "unknown operator or parallel form '" + term.name + "'"}});
  pcg::AttrMap attrs = Library::resolve_attrs(term.name, *params, term.attrs, ints, term.loc);
  std::vector<TermValue<Domain>> args;
  for (const auto& a : term.args) args.push_back(eval_single(*a, vars, ints));
  if (args.size() != library_.input_count(term.name))
    throw LoomError({{term.loc, term.name + " takes " + std::to_string(library_.input_count(term.name)) + " inputs, given " +
                                    std::to_string(args.size())}});
  try {
    if (const auto* op = library_.find_op(term.name)) {
      std::vector<std::vector<std::int64_t>> dims;
      std::vector<pcg::ParallelShape> shapes;
      for (const auto& a : args) {
        dims.push_back(a.shape.dims);
        shapes.push_back(a.shape);
      }
      const std::shared_ptr<const Program> compiled = library_.compiled(*op, attrs, dims);
      const Program& program = *compiled;
      auto out_shapes = derive_output_degrees(program, shapes);
      std::vector<TermValue<Domain>> outs(out_shapes.size());
      for (std::size_t i = 0; i < outs.size(); ++i) outs[i].shape = out_shapes[i];
      if (compute_values_) {
        std::vector<const Tensor<typename Domain::Value>*> inputs;
        for (const auto& a : args) inputs.push_back(&a.value);
        auto values = evaluate<Domain>(program, inputs);
        for (std::size_t i = 0; i < outs.size(); ++i) outs[i].value = std::move(values[i]);
      }
      return outs;
    }
    if (const auto* form = library_.find_parallel(term.name)) {
      TermValue<Domain> out = args[0];
      out.shape = apply_parallel_form(*form, attrs, args[0].shape);
      return {out};
    }
    const auto* fused = library_.find_fused(term.name);
    Bindings inner;
    for (std::size_t i = 0; i < fused->inputs.size(); ++i) inner[fused->inputs[i].name] = args[i];
    IntScope scope;
    for (const auto& [k, v] : attrs) scope.values[k] = v;
    return eval(*fused->body, inner, scope);
  } catch (const LoomError& e) {
    throw LoomError({{term.loc, "in " + term.name + ": " + e.what()}});
  }
}

template class TermEvaluator<RealDomain>;
template class TermEvaluator<ModularDomain>;

}  // namespace loom::spec

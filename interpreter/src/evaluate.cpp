#include "loom/interpreter/evaluate.hpp"

#include <cmath>

#include "loom/interpreter/body_eval.hpp"

namespace loom::spec {

template <class Domain>
typename Domain::Value BodyEvaluator<Domain>::operator()(const CNode& n, Slots& slots) const {
  auto truth = [](bool b) { return Domain::from_int(b ? 1 : 0); };
  const auto& value = *this;
  switch (n.op) {
    case COp::Const: return Domain::from_real(n.constant);
    case COp::Index: return Domain::from_int(slots[static_cast<std::size_t>(n.slot)]);
    case COp::Read: {
      const Tensor<Value>& t = *buffers_[static_cast<std::size_t>(n.buffer)];
      if (auto offset = read_offset(n, t.dims, slots)) return t.data[*offset];
      return n.has_fallback ? value(n.children[0], slots) : Domain::from_int(0);
    }
    case COp::Reduce: return reduce(n, slots);
    case COp::Neg: return Domain::neg(value(n.children[0], slots));
    case COp::Not: return truth(!Domain::truthy(value(n.children[0], slots)));
    case COp::Select: return Domain::truthy(value(n.children[0], slots)) ? value(n.children[1], slots) : value(n.children[2], slots);
    case COp::And: return truth(Domain::truthy(value(n.children[0], slots)) && Domain::truthy(value(n.children[1], slots)));
    case COp::Or: return truth(Domain::truthy(value(n.children[0], slots)) || Domain::truthy(value(n.children[1], slots)));
    case COp::Call: {
      Value a = value(n.children[0], slots);
      Value b = n.children.size() > 1 ? value(n.children[1], slots) : Value{};
      return Domain::apply(n.fn, a, b);
    }
    default: break;
  }
  Value a = value(n.children[0], slots), b = value(n.children[1], slots);
  switch (n.op) {
    case COp::Add: return Domain::add(a, b);
    case COp::Sub: return Domain::sub(a, b);
    case COp::Mul: return Domain::mul(a, b);
    case COp::Div: return Domain::div(a, b);
    case COp::Lt: return truth(Domain::less(a, b));
    case COp::Le: return truth(!Domain::less(b, a));
    case COp::Gt: return truth(Domain::less(b, a));
    case COp::Ge: return truth(!Domain::less(a, b));
    case COp::Eq: return truth(Domain::equal(a, b));
    case COp::Ne: return truth(!Domain::equal(a, b));
    default: throw LoomError("'" + n.text + "': '%' applies to indices, not values");
  }
}

template <class Domain>
typename Domain::Value BodyEvaluator<Domain>::reduce(const CNode& n, Slots& slots) const {
  Value acc = n.reducer == Reducer::Sum ? Domain::from_int(0) : n.reducer == Reducer::Max ? Domain::lowest() : Domain::highest();
  for_each_reduce_point(n, slots, [&] {
    Value v = (*this)(n.children[0], slots);
    switch (n.reducer) {
      case Reducer::Sum: acc = Domain::add(acc, v); break;
      case Reducer::Max:
        if (Domain::less(acc, v)) acc = v;
        break;
      case Reducer::Min:
        if (Domain::less(v, acc)) acc = v;
        break;
    }
  });
  return acc;
}

template class BodyEvaluator<RealDomain>;
template class BodyEvaluator<ModularDomain>;

namespace {

template <class Domain>
class Evaluator {
  using V = typename Domain::Value;

 public:
  Evaluator(const Program& p, const std::vector<const Tensor<V>*>& inputs) : program_(p), body_(p.buffers.size()) {
    if (inputs.size() != p.input_buffers.size()) throw LoomError(p.op->name + ": wrong number of input tensors");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& want = p.buffers[static_cast<std::size_t>(p.input_buffers[i])].dims;
      if (inputs[i]->dims != want)
        throw LoomError(p.op->name + ": input " + std::to_string(i) + " has shape " + dims_to_string(inputs[i]->dims) +
                        ", the instance expects " + dims_to_string(want));
      body_.bind(p.input_buffers[i], inputs[i]);
    }
  }

  std::vector<Tensor<V>> run() {
    std::vector<Tensor<V>> owned(program_.buffers.size());
    for (const auto& st : program_.statements) {
      auto target = static_cast<std::size_t>(st.target);
      owned[target] = Tensor<V>(program_.buffers[target].dims, Domain::from_int(0));
      body_.bind(st.target, &owned[target]);
      run_statement(st, owned[target]);
    }
    std::vector<Tensor<V>> outputs;
    for (int b : program_.output_buffers) outputs.push_back(std::move(owned[static_cast<std::size_t>(b)]));
    return outputs;
  }

 private:
  void run_statement(const Statement& st, Tensor<V>& target) {
    std::vector<std::int64_t> slots(static_cast<std::size_t>(st.slot_count), 0);
    const auto& dims = target.dims;
    for (std::size_t flat = 0; flat < target.size(); ++flat) {
      std::size_t rest = flat;
      for (std::size_t k = dims.size(); k-- > 0;) {
        slots[static_cast<std::size_t>(st.lhs_slots[k])] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(dims[k]));
        rest /= static_cast<std::size_t>(dims[k]);
      }
      target.data[flat] = body_(st.body, slots);
    }
  }

  const Program& program_;
  BodyEvaluator<Domain> body_;
};

}  // namespace

template <class Domain>
std::vector<Tensor<typename Domain::Value>> evaluate(const Program& program,
                                                     const std::vector<const Tensor<typename Domain::Value>*>& inputs) {
  return Evaluator<Domain>(program, inputs).run();
}

template std::vector<Tensor<double>> evaluate<RealDomain>(const Program&, const std::vector<const Tensor<double>*>&);
template std::vector<Tensor<ModularDomain::Value>> evaluate<ModularDomain>(const Program&,
                                                                           const std::vector<const Tensor<ModularDomain::Value>*>&);

}  // namespace loom::spec

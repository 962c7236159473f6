#include "loom/superopt/step_eval.hpp"

#include <random>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/term_eval.hpp"
#include "loom/superopt/hash.hpp"

namespace loom::superopt {

namespace {
// Inputs are small signed integers, so that products of a few of them stay far below p/2 and the
// order relu and max see agrees with the integers'; identity testing stays sharp (a polynomial
// of degree d vanishes at a random point of this range with probability at most d / 8193).
constexpr std::int64_t kInputRange = 4096;
}  // namespace

template <class Domain>
std::size_t StepEvaluator<Domain>::KeyHash::operator()(const Key& k) const {
  std::uint64_t h = k.inst;
  for (const auto* s : k.shapes) h = hash_combine(h, reinterpret_cast<std::uintptr_t>(s));
  return static_cast<std::size_t>(h);
}

template <class Domain>
std::size_t StepEvaluator<Domain>::ShapeHash::operator()(const pcg::ParallelShape& s) const {
  std::uint64_t h = hash_combine(static_cast<std::uint64_t>(s.V), static_cast<std::uint64_t>(s.R));
  for (auto v : s.dims) h = hash_combine(h, static_cast<std::uint64_t>(v));
  for (auto v : s.D) h = hash_combine(h, static_cast<std::uint64_t>(v));
  for (auto v : s.P) h = hash_combine(h, static_cast<std::uint64_t>(v));
  return static_cast<std::size_t>(h);
}

template <class Domain>
const pcg::ParallelShape* StepEvaluator<Domain>::intern(const pcg::ParallelShape& shape) {
  auto it = interned_.find(shape);
  if (it != interned_.end()) return it->second;
  shapes_.push_back(shape);
  interned_.emplace(shape, &shapes_.back());
  return &shapes_.back();
}

template <class Domain>
const std::vector<const pcg::ParallelShape*>* StepEvaluator<Domain>::infer(std::size_t inst, const pcg::ParallelShape* const* inputs,
                                                                           std::size_t count) {
  Key key;
  key.inst = inst;
  for (std::size_t i = 0; i < count; ++i) key.shapes[i] = inputs[i];
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    const OpInstance& op = ops_.at(inst);
    Entry entry;
    std::vector<pcg::ParallelShape> in;
    for (std::size_t i = 0; i < count; ++i) in.push_back(*inputs[i]);
    try {
      for (const auto& s : library_.infer(op.name, op.attrs, in)) entry.outputs.push_back(intern(s));
      if (op.kind == FormKind::Op) {
        std::vector<std::vector<std::int64_t>> dims;
        for (const auto& s : in) dims.push_back(s.dims);
        entry.program = std::make_shared<const spec::Program>(library_.instantiate(op.name, op.attrs, dims));
      }
      entry.ok = true;
    } catch (const LoomError&) {
      entry.ok = false;
    }
    it = cache_.emplace(key, std::move(entry)).first;
  }
  return it->second.ok ? &it->second.outputs : nullptr;
}

template <class Domain>
std::vector<Value<typename Domain::Value>> StepEvaluator<Domain>::apply(std::size_t inst, const Value<V>* inputs, std::size_t count) {
  std::array<const pcg::ParallelShape*, kMaxOpInputs> shapes{};
  for (std::size_t i = 0; i < count; ++i) shapes[i] = inputs[i].shape;
  const auto* outs = infer(inst, shapes.data(), count);
  const OpInstance& op = ops_.at(inst);
  if (!outs) throw LoomError(op.describe() + " does not accept its inputs");
  Key key;
  key.inst = inst;
  for (std::size_t i = 0; i < count; ++i) key.shapes[i] = shapes[i];
  const Entry& entry = cache_.at(key);
  std::vector<Value<V>> result(outs->size());
  if (op.kind == FormKind::Op) {
    std::vector<const spec::Tensor<V>*> args;
    for (std::size_t i = 0; i < count; ++i) args.push_back(inputs[i].tensor.get());
    auto values = spec::evaluate<Domain>(*entry.program, args);
    for (std::size_t i = 0; i < result.size(); ++i) {
      result[i].shape = (*outs)[i];
      result[i].tensor = std::make_shared<const spec::Tensor<V>>(std::move(values[i]));
    }
    return result;
  }
  // Forms are evaluated as the term `form<attrs>(a0, a1, ...)` by the interpreter.
  spec::Term term;
  term.kind = spec::TermKind::Apply;
  term.name = op.name;
  typename spec::TermEvaluator<Domain>::Bindings vars;
  for (const auto& name : op.attr_order) {
    auto e = std::make_shared<spec::Expr>();
    e->kind = spec::ExprKind::Number;
    e->integral = true;
    e->number = static_cast<double>(op.attrs.at(name));
    term.attrs.push_back({"", e, {}});
  }
  for (std::size_t i = 0; i < count; ++i) {
    auto arg = std::make_shared<spec::Term>();
    arg->kind = spec::TermKind::Var;
    arg->name = "a" + std::to_string(i);
    term.args.push_back(arg);
    vars[arg->name] = {*inputs[i].shape, *inputs[i].tensor};
  }
  spec::TermEvaluator<Domain> evaluator(library_);
  auto values = evaluator.eval(term, vars, {});
  for (std::size_t i = 0; i < result.size(); ++i) {
    result[i].shape = (*outs)[i];
    result[i].tensor = std::make_shared<const spec::Tensor<V>>(std::move(values[i].value));
  }
  return result;
}

template <class Domain>
std::vector<std::vector<Value<typename Domain::Value>>> StepEvaluator<Domain>::run(
    const GraphView& view, const std::vector<Value<V>>& inputs, const std::pair<std::size_t, std::vector<Value<V>>>* replaced) {
  std::vector<std::vector<Value<V>>> ports;
  std::array<Value<V>, kMaxOpInputs> args;
  for (const Step& s : view.steps) {
    if (replaced && replaced->first == ports.size()) {
      ports.push_back(replaced->second);
      continue;
    }
    for (std::size_t i = 0; i < s.argc; ++i) {
      const TensorRef r = s.args[i];
      args[i] = is_input_ref(r) ? inputs[input_of(r)] : ports[node_of(r)][port_of(r)];
    }
    ports.push_back(apply(s.inst, args.data(), s.argc));
  }
  return ports;
}

template <class Domain>
Value<typename Domain::Value> StepEvaluator<Domain>::output(const GraphView& view, const std::vector<Value<V>>& inputs) {
  if (is_input_ref(view.output)) return inputs[input_of(view.output)];
  auto ports = run(view, inputs);
  return ports[node_of(view.output)][port_of(view.output)];
}

template class StepEvaluator<spec::RealDomain>;
template class StepEvaluator<spec::ModularDomain>;

std::vector<Value<spec::ModularValue>> modular_inputs(StepEvaluator<spec::ModularDomain>& eval, const std::vector<InputTensor>& inputs,
                                                      std::uint64_t seed) {
  std::vector<Value<spec::ModularValue>> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::mt19937_64 rng(hash_combine(seed, i));
    std::uniform_int_distribution<std::int64_t> uniform(-kInputRange, kInputRange);
    spec::Tensor<spec::ModularValue> t(inputs[i].shape.dims);
    for (auto& v : t.data) v = spec::ModularDomain::from_int(uniform(rng));
    out.push_back({eval.intern(inputs[i].shape), std::make_shared<const spec::Tensor<spec::ModularValue>>(std::move(t))});
  }
  return out;
}

}  // namespace loom::superopt

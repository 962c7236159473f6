#include "loom/interpreter/gradient.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "loom/interpreter/body_eval.hpp"
#include "loom/interpreter/compiled_eval.hpp"
#include "loom/interpreter/evaluate.hpp"

namespace loom::spec {

bool reads_values(const CNode& n) {
  if (n.op == COp::Read) return true;
  return std::any_of(n.children.begin(), n.children.end(), [](const CNode& c) { return reads_values(c); });
}

bool gradient_reads_operand(const CNode& parent, std::size_t i) {
  switch (parent.op) {
    case COp::Add:
    case COp::Sub:
    case COp::Neg:
    case COp::Read:
    case COp::Lt:
    case COp::Le:
    case COp::Gt:
    case COp::Ge:
    case COp::Eq:
    case COp::Ne:
    case COp::And:
    case COp::Or:
    case COp::Not: return false;
    case COp::Reduce: return parent.reducer != Reducer::Sum;
    case COp::Mul: return reads_values(parent.children[1 - i]);
    case COp::Div: return i == 1 || reads_values(parent.children[1]);
    case COp::Select: return i == 0;
    default: return true;
  }
}
namespace {

// Every buffer's value: the inputs as given, the `let`s and outputs from one forward evaluation.
std::vector<Tensor<double>> forward_buffers(const Program& program, const std::vector<const Tensor<double>*>& inputs) {
  Program every_buffer = program;
  every_buffer.output_buffers.clear();
  for (const Statement& st : program.statements) every_buffer.output_buffers.push_back(st.target);
  std::vector<Tensor<double>> computed = evaluate<RealDomain>(every_buffer, inputs);
  std::vector<Tensor<double>> buffers(program.buffers.size());
  for (std::size_t i = 0; i < program.input_buffers.size(); ++i) buffers[static_cast<std::size_t>(program.input_buffers[i])] = *inputs[i];
  for (std::size_t s = 0; s < program.statements.size(); ++s)
    buffers[static_cast<std::size_t>(program.statements[s].target)] = std::move(computed[s]);
  return buffers;
}

class Differentiator {
 public:
  Differentiator(const Program& program, std::vector<Tensor<double>> values)
      : program_(program), values_(std::move(values)), body_(program.buffers.size()) {
    for (const Buffer& b : program.buffers) grads_.emplace_back(b.dims, 0.0);
    for (std::size_t b = 0; b < values_.size(); ++b) body_.bind(static_cast<int>(b), &values_[b]);
  }

  Differentiator(const Differentiator&) = delete;
  Differentiator& operator=(const Differentiator&) = delete;

  Tensor<double>& grad(int buffer) { return grads_[static_cast<std::size_t>(buffer)]; }

  void run() {
    for (auto st = program_.statements.rbegin(); st != program_.statements.rend(); ++st) backprop_statement(*st);
  }

 private:
  void backprop_statement(const Statement& st) {
    const Tensor<double>& target_grad = grads_[static_cast<std::size_t>(st.target)];
    Slots slots(static_cast<std::size_t>(st.slot_count), 0);
    const auto& dims = target_grad.dims;
    for (std::size_t flat = 0; flat < target_grad.size(); ++flat) {
      const double adjoint = target_grad.data[flat];
      if (adjoint == 0) continue;
      std::size_t rest = flat;
      for (std::size_t k = dims.size(); k-- > 0;) {
        slots[static_cast<std::size_t>(st.lhs_slots[k])] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(dims[k]));
        rest /= static_cast<std::size_t>(dims[k]);
      }
      backprop(st.body, slots, adjoint);
    }
  }

  void backprop(const CNode& n, Slots& slots, double adjoint) {
    switch (n.op) {
      case COp::Read:
        if (auto offset = read_offset(n, values_[static_cast<std::size_t>(n.buffer)].dims, slots)) {
          grads_[static_cast<std::size_t>(n.buffer)].data[*offset] += adjoint;
        } else if (n.has_fallback) {
          backprop(n.children[0], slots, adjoint);
        }
        return;
      case COp::Reduce: return backprop_reduce(n, slots, adjoint);
      case COp::Neg: return backprop(n.children[0], slots, -adjoint);
      case COp::Add: backprop(n.children[0], slots, adjoint); return backprop(n.children[1], slots, adjoint);
      case COp::Sub: backprop(n.children[0], slots, adjoint); return backprop(n.children[1], slots, -adjoint);
      case COp::Mul: {
        const double a = value(n.children[0], slots), b = value(n.children[1], slots);
        backprop(n.children[0], slots, adjoint * b);
        return backprop(n.children[1], slots, adjoint * a);
      }
      case COp::Div: {
        const double a = value(n.children[0], slots), b = value(n.children[1], slots);
        backprop(n.children[0], slots, adjoint / b);
        return backprop(n.children[1], slots, -adjoint * a / (b * b));
      }
      case COp::Select: return backprop(n.children[value(n.children[0], slots) != 0 ? 1 : 2], slots, adjoint);
      case COp::Call: return backprop_call(n, slots, adjoint);
      default: return;  // constants, indices, comparisons and logic have no derivative
    }
  }

  void backprop_call(const CNode& n, Slots& slots, double adjoint) {
    const double a = value(n.children[0], slots);
    const double b = n.children.size() > 1 ? value(n.children[1], slots) : 0.0;
    double da = 0, db = 0;
    switch (n.fn) {
      case Function::Exp: da = std::exp(a); break;
      case Function::Log: da = 1 / a; break;
      case Function::Tanh: da = 1 - std::tanh(a) * std::tanh(a); break;
      case Function::Sigmoid: {
        const double s = RealDomain::apply(Function::Sigmoid, a);
        da = s * (1 - s);
        break;
      }
      case Function::Sqrt: da = 0.5 / std::sqrt(a); break;
      case Function::Abs: da = a > 0 ? 1 : a < 0 ? -1 : 0; break;
      case Function::Erf: da = 2 / std::sqrt(std::numbers::pi) * std::exp(-a * a); break;
      case Function::Pow:
        da = b * std::pow(a, b - 1);
        db = a > 0 ? std::pow(a, b) * std::log(a) : 0;
        break;
      case Function::Max: (a < b ? db : da) = 1; break;
      case Function::Min: (b < a ? db : da) = 1; break;
    }
    if (da != 0) backprop(n.children[0], slots, adjoint * da);
    if (db != 0) backprop(n.children[1], slots, adjoint * db);
  }

  void backprop_reduce(const CNode& n, Slots& slots, double adjoint) {
    if (n.reducer == Reducer::Sum) {
      for_each_reduce_point(n, slots, [&] { backprop(n.children[0], slots, adjoint); });
      return;
    }
    // max/min: the first point that attains the extreme takes the whole gradient.
    Slots best;
    double best_value = n.reducer == Reducer::Max ? -HUGE_VAL : HUGE_VAL;
    for_each_reduce_point(n, slots, [&] {
      const double v = value(n.children[0], slots);
      if (best.empty() || (n.reducer == Reducer::Max ? best_value < v : v < best_value)) {
        best_value = v;
        best = slots;
      }
    });
    if (best.empty()) return;
    slots = best;
    backprop(n.children[0], slots, adjoint);
  }

  // Reads of values_: the evaluator holds pointers to its tensors.
  double value(const CNode& n, Slots& slots) const { return body_(n, slots); }

  const Program& program_;
  std::vector<Tensor<double>> values_;
  std::vector<Tensor<double>> grads_;
  BodyEvaluator<RealDomain> body_;
};

}  // namespace

std::vector<Tensor<double>> evaluate_gradient(const Program& program, const std::vector<const Tensor<double>*>& inputs,
                                              const std::vector<const Tensor<double>*>& output_grads) {
  if (output_grads.size() != program.output_buffers.size())
    throw LoomError(program.op->name + ": " + std::to_string(output_grads.size()) + " output gradients for " +
                    std::to_string(program.output_buffers.size()) + " outputs");
  Differentiator d(program, forward_buffers(program, inputs));
  for (std::size_t k = 0; k < output_grads.size(); ++k) {
    if (!output_grads[k]) continue;
    Tensor<double>& g = d.grad(program.output_buffers[k]);
    if (output_grads[k]->dims != g.dims)
      throw LoomError(program.op->name + ": the gradient of output " + std::to_string(k) + " has shape " +
                      dims_to_string(output_grads[k]->dims) + ", the output has " + dims_to_string(g.dims));
    g.data = output_grads[k]->data;
  }
  d.run();
  std::vector<Tensor<double>> result;
  for (int b : program.input_buffers) result.push_back(std::move(d.grad(b)));
  return result;
}

}  // namespace loom::spec

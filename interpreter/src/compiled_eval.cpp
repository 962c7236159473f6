#include "loom/interpreter/compiled_eval.hpp"

#include <algorithm>
#include <cmath>

#include "loom/pcg/diagnostic.hpp"

namespace loom::spec {

std::int64_t eval_index(const CNode& n, Slots& slots) {
  switch (n.op) {
    case COp::Const: return static_cast<std::int64_t>(n.constant);
    case COp::Index: return slots[static_cast<std::size_t>(n.slot)];
    case COp::Neg: return -eval_index(n.children[0], slots);
    case COp::Not: return eval_index(n.children[0], slots) == 0;
    case COp::Select: return eval_index(n.children[0], slots) ? eval_index(n.children[1], slots) : eval_index(n.children[2], slots);
    case COp::Call: {
      const auto a = eval_index(n.children[0], slots);
      if (n.fn == Function::Abs) return std::abs(a);
      const auto b = eval_index(n.children[1], slots);
      return n.fn == Function::Min ? std::min(a, b) : std::max(a, b);
    }
    default: break;
  }
  const auto a = eval_index(n.children[0], slots), b = eval_index(n.children[1], slots);
  switch (n.op) {
    case COp::Add: return a + b;
    case COp::Sub: return a - b;
    case COp::Mul: return a * b;
    case COp::Div: return b == 0 ? 0 : (a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
    case COp::Mod: return b == 0 ? 0 : ((a % b) + b) % b;
    case COp::Lt: return a < b;
    case COp::Le: return a <= b;
    case COp::Gt: return a > b;
    case COp::Ge: return a >= b;
    case COp::Eq: return a == b;
    case COp::Ne: return a != b;
    case COp::And: return a && b;
    case COp::Or: return a || b;
    default: throw LoomError("'" + n.text + "' is not an integer index expression");
  }
}

std::optional<std::size_t> read_offset(const CNode& n, const std::vector<std::int64_t>& dims, Slots& slots) {
  std::size_t offset = 0;
  for (std::size_t k = 0; k < n.index.size(); ++k) {
    const IndexCalc& calc = n.index[k];
    const std::int64_t i = calc.slot >= 0 ? slots[static_cast<std::size_t>(calc.slot)] : eval_index(calc.expr[0], slots);
    if (i < 0 || i >= dims[k]) return std::nullopt;
    offset = offset * static_cast<std::size_t>(dims[k]) + static_cast<std::size_t>(i);
  }
  return offset;
}

}  // namespace loom::spec

#include "loom/interpreter/ast.hpp"

#include "loom/pcg/rule.hpp"

#include <array>
#include <string>
#include <utility>

namespace loom::spec {

std::optional<BinaryOp> binary_op_of(std::string_view symbol) {
  static constexpr std::array<std::pair<std::string_view, BinaryOp>, 13> symbols = {{
      {"+", BinaryOp::Add},
      {"-", BinaryOp::Sub},
      {"*", BinaryOp::Mul},
      {"/", BinaryOp::Div},
      {"%", BinaryOp::Mod},
      {"<", BinaryOp::Lt},
      {"<=", BinaryOp::Le},
      {">", BinaryOp::Gt},
      {">=", BinaryOp::Ge},
      {"==", BinaryOp::Eq},
      {"!=", BinaryOp::Ne},
      {"&&", BinaryOp::And},
      {"||", BinaryOp::Or},
  }};
  for (const auto& [text, op] : symbols)
    if (text == symbol) return op;
  return std::nullopt;
}

std::string literal_name(double value) { return pcg::literal_name(value); }

}  // namespace loom::spec

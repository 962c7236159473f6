// The parser records which binary operator an expression applies, so that evaluation, compilation
// and the Z3 encoding dispatch on the operator rather than on its spelling.
#include <gtest/gtest.h>

#include "loom/interpreter/library.hpp"

namespace loom::spec {
namespace {

TEST(BinaryOps, TheParserRecordsEachOperator) {
  const Library lib = Library::from_text(R"(
op every(x: [n]) -> [n] {
  require n + 1 > 0 && n - 1 >= 0 || n * 2 < 0 || n / 1 <= n % 7 + n || n == 1 || n != 2;
  out[i] = x[i];
}
)");
  const Expr* e = lib.find_op("every")->stmts.at(0).expr.get();
  std::vector<BinaryOp> seen;
  std::vector<const Expr*> todo{e};
  while (!todo.empty()) {
    const Expr* at = todo.back();
    todo.pop_back();
    if (at->kind == ExprKind::Binary) {
      seen.push_back(at->binary);
      EXPECT_EQ(binary_op_of(at->name), at->binary) << at->name;
    }
    for (const auto& a : at->args) todo.push_back(a.get());
  }
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt,
                      BinaryOp::Ge, BinaryOp::Eq, BinaryOp::Ne, BinaryOp::And, BinaryOp::Or})
    EXPECT_NE(std::find(seen.begin(), seen.end(), op), seen.end()) << static_cast<int>(op);
}

TEST(BinaryOps, OnlyTheLanguagesSymbolsAreOperators) {
  EXPECT_EQ(binary_op_of("<="), BinaryOp::Le);
  EXPECT_EQ(binary_op_of("||"), BinaryOp::Or);
  EXPECT_FALSE(binary_op_of("^"));
  EXPECT_FALSE(binary_op_of("=<"));
  EXPECT_FALSE(binary_op_of(""));
}

}  // namespace
}  // namespace loom::spec

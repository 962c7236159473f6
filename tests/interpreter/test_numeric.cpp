#include <gtest/gtest.h>

#include "loom/interpreter/numeric.hpp"

namespace loom::spec {
namespace {

using M = ModularDomain;

TEST(Modular, FieldArithmeticAgreesWithIntegers) {
  for (std::int64_t a : {-7, -1, 0, 3, 12345}) {
    for (std::int64_t b : {-5, 1, 2, 9}) {
      EXPECT_EQ(M::signed_value(M::add(M::from_int(a), M::from_int(b))), a + b);
      EXPECT_EQ(M::signed_value(M::sub(M::from_int(a), M::from_int(b))), a - b);
      EXPECT_EQ(M::signed_value(M::mul(M::from_int(a), M::from_int(b))), a * b);
    }
  }
}

TEST(Modular, DivisionIsExactInverse) {
  auto x = M::div(M::from_int(7), M::from_int(3));
  EXPECT_EQ(M::mul(x, M::from_int(3)), M::from_int(7));
  EXPECT_EQ(M::from_real(0.5), M::div(M::from_int(1), M::from_int(2)));
}

TEST(Modular, OrderingUsesSignedRepresentatives) {
  EXPECT_TRUE(M::less(M::from_int(-3), M::from_int(2)));
  EXPECT_EQ(M::signed_value(M::apply(Function::Max, M::from_int(-4), M::from_int(0))), 0);
  EXPECT_EQ(M::signed_value(M::apply(Function::Pow, M::from_int(3), M::from_int(4))), 81);
}

TEST(Modular, NonPolynomialFunctionsAreDeterministic) {
  auto a = M::apply(Function::Exp, M::from_int(5));
  EXPECT_EQ(a, M::apply(Function::Exp, M::from_int(5)));
  EXPECT_NE(a, M::apply(Function::Exp, M::from_int(6)));
  EXPECT_NE(a, M::apply(Function::Tanh, M::from_int(5)));
}

}  // namespace
}  // namespace loom::spec

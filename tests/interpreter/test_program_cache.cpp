// Compiled operator instances are kept, and so are the errors of instances that do not compile:
// a check at random sizes asks for the same ill-typed instance many times.
#include <gtest/gtest.h>

#include <string>

#include "loom/interpreter/program_cache.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

TEST(ProgramCache, KeepsAnInstanceAndAnswersAgainWithTheSameProgram) {
  ProgramCache cache;
  const OpDecl& matmul = *test::bundled().find_op("matmul");
  const auto first = cache.get(matmul, {}, {{2, 3}, {3, 4}});
  const auto again = cache.get(matmul, {}, {{2, 3}, {3, 4}});
  EXPECT_EQ(first.get(), again.get());
  const auto other = cache.get(matmul, {}, {{2, 3}, {3, 5}});
  EXPECT_NE(first.get(), other.get());
}

TEST(ProgramCache, AnInstanceThatDoesNotCompileThrowsTheSameErrorEachTime) {
  ProgramCache cache;
  const OpDecl& matmul = *test::bundled().find_op("matmul");
  std::string first, again;
  try {
    cache.get(matmul, {}, {{2, 3}, {4, 5}});
  } catch (const LoomError& e) {
    first = e.what();
  }
  try {
    cache.get(matmul, {}, {{2, 3}, {4, 5}});
  } catch (const LoomError& e) {
    again = e.what();
  }
  EXPECT_FALSE(first.empty()) << "inner dimensions 3 and 4 differ";
  EXPECT_EQ(first, again);
  EXPECT_NO_THROW(cache.get(matmul, {}, {{2, 3}, {3, 5}}));
}

}  // namespace
}  // namespace loom::spec

// Compiled operator instances are kept, and so are the errors of instances that do not compile:
// a check at random sizes asks for the same ill-typed instance many times.
#include <gtest/gtest.h>

#include <string>

#include "loom/interpreter/parallel_rules.hpp"
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

// The output shapes kept for a split are those derive_output_degrees gives, split by split; a
// split the operator refuses is refused again with the same words.
TEST(ProgramCache, KeepsTheOutputShapesOfEachSplit) {
  ProgramCache cache;
  const OpDecl& matmul = *test::bundled().find_op("matmul");
  const auto program = compile(matmul, {}, {{8, 6}, {6, 4}});
  using pcg::ParallelShape;
  const std::vector<std::vector<ParallelShape>> splits{
      {ParallelShape::partitioned({8, 6}, {2, 1}), ParallelShape::partitioned({6, 4}, {1, 1}, 1, 2)},
      {ParallelShape::partitioned({8, 6}, {1, 3}), ParallelShape::partitioned({6, 4}, {3, 1})},
      {ParallelShape::unpartitioned({8, 6}), ParallelShape::unpartitioned({6, 4})}};
  for (int round = 0; round < 2; ++round)
    for (const auto& inputs : splits) EXPECT_EQ(cache.output_shapes(matmul, {}, inputs), derive_output_degrees(program, inputs));
  EXPECT_NE(cache.output_shapes(matmul, {}, splits[0]), cache.output_shapes(matmul, {}, splits[1]));
  const std::vector<ParallelShape> refused{ParallelShape::partitioned({8, 6}, {1, 3}), ParallelShape::unpartitioned({6, 4})};
  std::string first;
  try {
    derive_output_degrees(program, refused);
  } catch (const LoomError& e) {
    first = e.what();
  }
  ASSERT_FALSE(first.empty()) << "the contracted dimension split on one side only";
  for (int round = 0; round < 2; ++round) {
    std::string said;
    try {
      cache.output_shapes(matmul, {}, refused);
    } catch (const LoomError& e) {
      said = e.what();
    }
    EXPECT_EQ(said, first) << "round " << round;
  }
}

}  // namespace
}  // namespace loom::spec

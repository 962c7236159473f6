// Parallel shapes and machine views hash by value, so that caches can be keyed by them.
#include <gtest/gtest.h>

#include <unordered_set>

#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::pcg {
namespace {

ParallelShape shape(std::vector<std::int64_t> D, std::int64_t V, std::int64_t R) {
  return ParallelShape::partitioned({8, 4}, std::move(D), V, R);
}

TEST(ValueHashes, EqualShapesHashEquallyAndEveryDegreeCounts) {
  const std::hash<ParallelShape> hash;
  EXPECT_EQ(hash(shape({2, 1}, 1, 1)), hash(shape({2, 1}, 1, 1)));
  std::unordered_set<std::size_t> seen;
  for (const ParallelShape& s : {shape({1, 1}, 1, 1), shape({2, 1}, 1, 1), shape({1, 2}, 1, 1), shape({1, 1}, 2, 1), shape({1, 1}, 1, 2),
                                 ParallelShape::unpartitioned({4, 8}), ParallelShape::unpartitioned({8, 4, 1})})
    seen.insert(hash(s));
  EXPECT_EQ(seen.size(), 7u) << "shapes that differ in one degree or dimension hash apart";
  std::unordered_set<ParallelShape> set{shape({2, 1}, 1, 1), shape({2, 1}, 1, 1), shape({1, 2}, 1, 1)};
  EXPECT_EQ(set.size(), 2u);
}

TEST(ValueHashes, ViewsHashByTheirDevicesInOrder) {
  const std::hash<MachineView> hash;
  EXPECT_EQ(hash(MachineView::contiguous(2, 3)), hash(MachineView{{2, 3, 4}}));
  EXPECT_NE(hash(MachineView{{2, 3, 4}}), hash(MachineView{{4, 3, 2}}));
  EXPECT_NE(hash(MachineView::contiguous(0, 2)), hash(MachineView::contiguous(0, 3)));
}

}  // namespace
}  // namespace loom::pcg

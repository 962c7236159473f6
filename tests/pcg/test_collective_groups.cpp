// Which layout changes are one collective within groups of processes, and which are not.
#include <gtest/gtest.h>

#include "loom/pcg/collective_groups.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"

namespace loom::pcg {
namespace {

ParallelShape held(std::vector<std::int64_t> D, std::int64_t V = 1, std::int64_t R = 1) {
  return ParallelShape::partitioned({8, 12}, std::move(D), V, R);
}

// The change from `from` to `to` with old task t on process from_first + t / from_per and new task
// t on process to_first + t / to_per.
std::optional<CollectiveGroups> groups_of(const ParallelShape& from, const ParallelShape& to, int from_first = 0, int to_first = 0,
                                          int from_per = 1, int to_per = 1) {
  MachineView from_view, to_view;
  for (std::int64_t t = 0; t < from.tasks(); ++t) from_view.devices.push_back(from_first + static_cast<int>(t) / from_per);
  for (std::int64_t t = 0; t < to.tasks(); ++t) to_view.devices.push_back(to_first + static_cast<int>(t) / to_per);
  return collective_groups(
      from, to, piece_moves(from, from_view, to, to_view), [&](std::int64_t t) { return from_view.devices[static_cast<std::size_t>(t)]; },
      [&](std::int64_t t) { return to_view.devices[static_cast<std::size_t>(t)]; });
}

TEST(CollectiveGroups, ASplitMovedToAnotherDimensionIsOneAllToAll) {
  for (std::int64_t k : {2, 4}) {
    const ParallelShape from = held({k, 1}), to = held({1, k});
    const auto c = groups_of(from, to);
    ASSERT_TRUE(c) << k;
    EXPECT_EQ(c->kind, Collective::all_to_all);
    ASSERT_EQ(c->groups.size(), 1u);
    const CollectiveGroup& g = c->groups.front();
    ASSERT_EQ(g.ranks.size(), static_cast<std::size_t>(k));
    ASSERT_EQ(g.blocks.size(), static_cast<std::size_t>(k * k));
    for (std::size_t i = 0; i < g.ranks.size(); ++i)
      for (std::size_t j = 0; j < g.ranks.size(); ++j) {
        const Region& block = g.blocks[i * g.ranks.size() + j];
        EXPECT_EQ(block, intersect(piece_region(from, g.from[i]), piece_region(to, g.to[j])));
        EXPECT_EQ(block.elements(), piece_elements(from) / k);
      }
  }
}

TEST(CollectiveGroups, IndependentPairsAreAllToAllsOfTheirOwn) {
  // Rows split in 4, moved to two blocks of rows each split by columns in 2: pairs {0, 1} and {2, 3}.
  const auto c = groups_of(held({4, 1}), held({2, 2}));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, Collective::all_to_all);
  ASSERT_EQ(c->groups.size(), 2u);
  EXPECT_EQ(c->groups[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(c->groups[1].ranks, (std::vector<int>{2, 3}));
}

TEST(CollectiveGroups, ChangesThatAreNoAllToAllAreRefused) {
  EXPECT_FALSE(groups_of(held({2, 1}, 2), held({1, 2}, 1)));        // partial sums added up as well
  EXPECT_FALSE(groups_of(held({2, 1}), held({1, 2}), 0, 2));        // the new pieces on other processes
  EXPECT_FALSE(groups_of(held({4, 1}), held({1, 4}), 0, 0, 2, 2));  // two pieces on each process
  EXPECT_FALSE(groups_of(held({2, 1}), held({1, 4})));              // pieces of other sizes
}

TEST(CollectiveGroups, PartialSumsToCopiesAreOneAllreduce) {
  const auto c = groups_of(held({1, 1}, 2), held({1, 1}, 1, 2));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, Collective::allreduce);
  EXPECT_EQ(transpose(Collective::all_to_all), Collective::all_to_all);
}

}  // namespace
}  // namespace loom::pcg

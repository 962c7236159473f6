// Layout operators emitted by the importer and the zoo, checked by evaluating them: a reshape keeps
// the row-major element order, a permutation moves every element where index arithmetic says,
// broadcasting repeats, and Swin's window and shift operators invert each other.
#include <numeric>

#include "graph_builder.hpp"
#include "layout.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

using std::int64_t;

TensorValue iota(const Dims& dims) {
  TensorValue t(dims);
  std::iota(t.data.begin(), t.data.end(), 0.0);
  return t;
}

TensorValue run(GraphBuilder& b, PortRef out, const TensorValue& x) {
  b.output(out);
  return evaluate(b.graph(), {{"x", x}}).at(0);
}

TEST(Layout, ReshapesKeepRowMajorOrder) {
  const std::vector<std::pair<Dims, Dims>> cases = {{{2, 3, 4}, {2, 12}},   {{2, 12}, {2, 3, 4}},  {{2, 3, 4}, {6, 4}},
                                                    {{4, 6}, {2, 2, 3, 2}}, {{2, 1, 3}, {2, 3}},   {{2, 3}, {1, 2, 3, 1}},
                                                    {{6, 4}, {4, 6}},       {{2, 3, 4}, {24}},     {{24}, {2, 3, 4}},
                                                    {{3, 4, 1}, {3, 2, 2}}, {{2, 6, 2}, {4, 3, 2}}};
  for (const auto& [from, to] : cases) {
    GraphBuilder b(library());
    PortRef y = reshape_to(b, b.input("x", from), to);
    EXPECT_EQ(b.dims(y), to);
    const TensorValue x = iota(from);
    EXPECT_EQ(run(b, y, x).data, x.data);
  }
}

TEST(Layout, ReshapeOfAnotherElementCountIsRefused) {
  GraphBuilder b(library());
  EXPECT_THROW(reshape_to(b, b.input("x", {2, 3}), {7}), LoomError);
}

TEST(Layout, PermutationsMoveEveryElement) {
  const Dims from = {2, 3, 4, 5};
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    GraphBuilder b(library());
    PortRef y = permute(b, b.input("x", from), perm);
    const TensorValue x = iota(from);
    const TensorValue out = run(b, y, x);
    Dims want_dims;
    for (auto p : perm) want_dims.push_back(from[static_cast<std::size_t>(p)]);
    ASSERT_EQ(out.dims, want_dims);
    for (int64_t flat = 0; flat < static_cast<int64_t>(out.size()); ++flat) {
      std::vector<int64_t> idx(4), src(4);
      int64_t rest = flat;
      for (int k = 3; k >= 0; --k) {
        idx[static_cast<std::size_t>(k)] = rest % want_dims[static_cast<std::size_t>(k)];
        rest /= want_dims[static_cast<std::size_t>(k)];
      }
      for (std::size_t k = 0; k < 4; ++k) src[static_cast<std::size_t>(perm[k])] = idx[k];
      ASSERT_EQ(out.data[static_cast<std::size_t>(flat)], x.at(src));
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(Layout, BroadcastRepeatsAlongNewAndUnitDimensions) {
  GraphBuilder b(library());
  PortRef y = broadcast_to(b, b.input("x", {3, 1}), {2, 3, 4});
  const TensorValue x = iota({3, 1});
  const TensorValue out = run(b, y, x);
  ASSERT_EQ(out.dims, (Dims{2, 3, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(out.at({i, j, k}), x.at({j, 0}));
  GraphBuilder bad(library());
  EXPECT_THROW(broadcast_to(bad, bad.input("x", {3, 2}), {3, 4}), LoomError);
}

TEST(Layout, WindowPartitionAndReverseInvertEachOther) {
  GraphBuilder b(library());
  PortRef x = b.input("x", {2, 8, 4, 3});
  PortRef windows = b.op("window_partition", {x}, {{"ws", 2}});
  EXPECT_EQ(b.dims(windows), (Dims{2 * 4 * 2, 4, 3}));
  PortRef shifted = b.op("cyclic_shift", {x}, {{"sh", 3}, {"sw", 1}});
  PortRef back = b.op("cyclic_shift", {shifted}, {{"sh", 5}, {"sw", 3}});
  PortRef y = b.op("ewadd", {b.op("window_reverse", {windows}, {{"ws", 2}, {"height", 8}, {"width", 4}}), back});
  b.output(windows);
  const TensorValue in = iota({2, 8, 4, 3});
  b.output(y);
  const auto out = evaluate(b.graph(), {{"x", in}});
  for (std::size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out.at(1).data[i], 2 * in.data[i]);
  // Window 1 of image 0 is rows 0-1, columns 2-3; its token 3 is row 1, column 3.
  EXPECT_EQ(out.at(0).at({1, 3, 2}), in.at({0, 1, 3, 2}));
}

}  // namespace
}  // namespace loom::models::test

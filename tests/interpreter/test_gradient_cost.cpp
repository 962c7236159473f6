// The arithmetic of an operator's derived gradient, as the cost model's backward roofline reads
// it, against counts made by hand from each comprehension.
#include <gtest/gtest.h>

#include "loom/interpreter/cost.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

TEST(GradientFlops, AMatrixProductsGradientIsTwoProductsOfItsSize) {
  const std::int64_t m = 8, k = 16, n = 4;
  const Program mm = test::bundled().instantiate("matmul", {}, {{m, k}, {k, n}});
  // Forward: m n points, each k multiplications and k additions; gradient: dx = dy w^T and
  // dw = x^T dy, each as many.
  EXPECT_DOUBLE_EQ(total_flops(mm), 2.0 * m * n * k);
  EXPECT_DOUBLE_EQ(gradient_flops(mm), 2 * 2.0 * m * n * k);
}

TEST(GradientFlops, OnlyTheGradientsOfInputsTakingOneAreComputed) {
  const std::int64_t m = 8, k = 16, n = 4;
  const Program mm = test::bundled().instantiate("matmul", {}, {{m, k}, {k, n}});
  const double product = 2.0 * m * n * k;
  EXPECT_DOUBLE_EQ(gradient_flops(mm, {true, true}), 2 * product);
  EXPECT_DOUBLE_EQ(gradient_flops(mm, {false, true}), product);  // a first layer: dw = x^T dy alone
  EXPECT_DOUBLE_EQ(gradient_flops(mm, {true, false}), product);
  EXPECT_DOUBLE_EQ(gradient_flops(mm, {false, false}), 0);
  // GLU with its data taking none: each product again and its weight's gradient product, 2 x 2k
  // each, the multiplication's and the sigmoid's derivatives as before.
  const Library lib = Library::from_text(test::bundled_imports() + R"(
op glu(x: [b, k], w: [k, n], v: [k, n]) -> [b, n] {
  out[i, j] = sum(p) (x[i, p] * w[p, j]) * sigmoid(sum(q) (x[i, q] * v[q, j]));
}
)",
                                         "glu.loom");
  const Program glu = lib.instantiate("glu", {}, {{4, 32}, {32, 8}, {32, 8}});
  EXPECT_DOUBLE_EQ(gradient_flops(glu, {false, true, true}), 4 * 8 * (2 * 2 * 2.0 * 32 + 2 * 2));
  // The library splits it over a task's pieces as the task cost does.
  const std::vector<pcg::ParallelShape> halves = {test::pshape({m, k}, {2, 1}), test::pshape({k, n}, {1, 1}, 1, 2)};
  EXPECT_DOUBLE_EQ(test::bundled().backward_flops("matmul", {}, halves, {false, true}), product / 2);
  EXPECT_DOUBLE_EQ(test::bundled().backward_flops("matmul", {}, halves, {}), product);
  // A first convolution, its images taking none: the filters' gradient product alone.
  const Program conv = test::bundled().instantiate("conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}},
                                                   {{2, 3, 8, 8}, {4, 3, 3, 3}});
  EXPECT_DOUBLE_EQ(gradient_flops(conv, {false, true}), gradient_flops(conv) / 2);
  EXPECT_DOUBLE_EQ(gradient_flops(conv, {true, true}), gradient_flops(conv));
}

TEST(GradientFlops, AnElementwiseOperatorsGradientIsTwiceItsForward) {
  const Program relu = test::bundled().instantiate("relu", {}, {{6, 5}});
  ASSERT_GT(total_flops(relu), 0);
  EXPECT_DOUBLE_EQ(gradient_flops(relu), 2 * total_flops(relu));
}

TEST(GradientFlops, AGatedProductComputesBothProductsAgain) {
  const Library lib = Library::from_text(test::bundled_imports() + R"(
op glu(x: [b, k], w: [k, n], v: [k, n]) -> [b, n] {
  out[i, j] = sum(p) (x[i, p] * w[p, j]) * sigmoid(sum(q) (x[i, q] * v[q, j]));
}
)",
                                         "glu.loom");
  const std::int64_t b = 4, k = 32, n = 8;
  const Program glu = lib.instantiate("glu", {}, {{b, k}, {k, n}, {k, n}});
  // Per point, forward: two products of 2k, the sigmoid, the gating multiplication.
  EXPECT_DOUBLE_EQ(total_flops(glu), b * n * (2 * 2.0 * k + 2));
  // Gradient: each product again (the other factor's gradient reads it) and its two gradient
  // products, 3 x 2k each; the multiplication's and the sigmoid's derivatives, 2 each.
  EXPECT_DOUBLE_EQ(gradient_flops(glu), b * n * (2 * 3 * 2.0 * k + 2 * 2));
  EXPECT_NEAR(gradient_flops(glu) / total_flops(glu), 3, 0.05);
}

TEST(GradientFlops, AProductReadThroughASumIsComputedAgain) {
  // The gate's factors are a product plus a bias: the gradient of each reads the other factor's
  // value, so both products are computed again, through the additions.
  const Library lib = Library::from_text(test::bundled_imports() + R"(
op glu_bias(x: [b, k], w: [k, n], v: [k, n], c: [n], d: [n]) -> [b, n] {
  out[i, j] = (sum(p) (x[i, p] * w[p, j]) + c[j]) * sigmoid(sum(q) (x[i, q] * v[q, j]) + d[j]);
}
)",
                                         "glu_bias.loom");
  const std::int64_t b = 4, k = 32, n = 8;
  const Program p = lib.instantiate("glu_bias", {}, {{b, k}, {k, n}, {k, n}, {n}, {n}});
  EXPECT_DOUBLE_EQ(total_flops(p), b * n * (2 * 2.0 * k + 4));
  // The multiplication, the two additions and the sigmoid: 2 each; each product 3 x 2k.
  EXPECT_DOUBLE_EQ(gradient_flops(p), b * n * (2 * 3 * 2.0 * k + 4 * 2));
}

TEST(GradientFlops, AFunctionOfOneValueAtTheRootTakesItsDerivativeFromTheOutput) {
  // matmul_relu = max(x w, 0): relu's derivative comes from the kept output, so the product is
  // not computed again; its gradient is the two products, as the matmul's.
  const std::int64_t m = 8, k = 16, n = 4;
  const Program fused = test::bundled().instantiate("matmul_relu", {}, {{m, k}, {k, n}});
  EXPECT_DOUBLE_EQ(total_flops(fused), m * n * (2.0 * k + 1));
  EXPECT_DOUBLE_EQ(gradient_flops(fused), m * n * (2 * 2.0 * k + 2));
}

// A row's sum or mean does not depend on the element's column: it counts once per row, so
// normalizing a row costs in proportion to its length, as its kernels do.
TEST(Cost, AReductionSharedByARowCountsOncePerRow) {
  const std::int64_t r = 6, n = 40;
  const auto softmax = [&](std::int64_t cols) { return test::bundled().instantiate("softmax", {}, {{r, cols}}); };
  // Per row: the max (n steps), exp(x - max) (2 per element), the sum (n steps) and the division.
  EXPECT_DOUBLE_EQ(total_flops(softmax(n)), r * 5.0 * n);
  EXPECT_DOUBLE_EQ(total_flops(softmax(2 * n)), 2 * total_flops(softmax(n)));
  EXPECT_DOUBLE_EQ(gradient_flops(softmax(2 * n)), 2 * gradient_flops(softmax(n)));
}

// A reduction within another counts once per step of the one around it that its points share: the
// inner sum below, which reads no index of the result, counts once per p, never less than once.
TEST(Cost, AReductionWithinAnotherCountsOncePerStepOfTheEnclosingOne) {
  const Library lib = Library::from_text(test::bundled_imports() + R"(
op scaled_rows(x: [m, k], y: [l], z: [m, n]) -> [m, n] {
  out[i, j] = sum(p) (x[i, p] * (sum(q) y[q])) + z[i, j];
}
)",
                                         "nested.loom");
  const double m = 3, k = 4, l = 5, n = 6;
  const Program p = lib.instantiate("scaled_rows", {}, {{3, 4}, {5}, {3, 6}});
  // Per row i: k products and sum steps (2k); the inner sum once per p (k l); the addition per point.
  EXPECT_DOUBLE_EQ(total_flops(p), m * 2 * k + k * l + m * n);
  EXPECT_GE(total_flops(p), l);
}

// A sum that keeps the one term whose summed index equals a value it reads (an embedding's
// lookup) costs one step of that index, as its kernel gathers the row rather than scanning the
// table, and so does its gradient, which adds into that row alone; the sums it also runs (a bag's
// tokens) count in full.
TEST(Cost, ALookupCostsOneStepOfTheIndexItLooksUp) {
  const std::int64_t b = 4, s = 8, v = 1000, d = 16;
  const Program gather = test::bundled().instantiate("gather_rows", {}, {{b, s}, {v, d}});
  const Program larger_table = test::bundled().instantiate("gather_rows", {}, {{b, s}, {4 * v, d}});
  // Per point: the comparison, the select and the sum's one step.
  EXPECT_DOUBLE_EQ(total_flops(gather), 3.0 * b * s * d);
  EXPECT_DOUBLE_EQ(total_flops(larger_table), total_flops(gather));
  EXPECT_GT(gradient_flops(gather), 0);
  EXPECT_DOUBLE_EQ(gradient_flops(larger_table), gradient_flops(gather));
  EXPECT_EQ(kernel_shape(gather), pcg::KernelShape::Elementwise);
  const auto bag = [&](std::int64_t tokens) { return test::bundled().instantiate("embedding_bag", {}, {{b, tokens}, {v, d}}); };
  EXPECT_DOUBLE_EQ(total_flops(bag(2)), 3.0 * b * d * 2);
  EXPECT_DOUBLE_EQ(total_flops(bag(4)), 2 * total_flops(bag(2)));
  EXPECT_EQ(kernel_shape(bag(2)), pcg::KernelShape::Reduction);
  // A condition that reads the summed index on both sides looks nothing up: every step counts.
  const Library lib = Library::from_text(test::bundled_imports() + R"(
op diagonal_match(x: [n, n], y: [n, n]) -> [n] {
  out[i] = sum(r) select(x[i, r] == r, y[i, r], 0);
}
)",
                                         "match.loom");
  const double n = 5;
  EXPECT_DOUBLE_EQ(total_flops(lib.instantiate("diagonal_match", {}, {{5, 5}, {5, 5}})), n * n * 3);
  // One equality looks up one index: a trace sums n terms, one step of s for each r.
  const Library traces = Library::from_text(test::bundled_imports() + R"(
op traces(x: [m, n, n]) -> [m] {
  out[i] = sum(r, s) select(r == s, x[i, r, s], 0);
}
)",
                                            "traces.loom");
  EXPECT_DOUBLE_EQ(total_flops(traces.instantiate("traces", {}, {{3, 5, 5}})), 3 * n * 3);
  EXPECT_EQ(kernel_shape(traces.instantiate("traces", {}, {{3, 5, 5}})), pcg::KernelShape::Reduction);
}

TEST(GradientFlops, LetsAreComputedAgainForTheGradient) {
  const Library lib = Library::from_text(test::bundled_imports() + R"(
op scaled_exp(x: [r, c]) -> [r, c] {
  let e[i, j] = exp(x[i, j]);
  out[i, j] = e[i, j] * 2;
}
)",
                                         "lets.loom");
  const Program p = lib.instantiate("scaled_exp", {}, {{3, 5}});
  // Forward: exp, then the multiplication. Gradient: the multiplication's and exp's derivatives
  // (2 each), and the `let` again.
  EXPECT_DOUBLE_EQ(total_flops(p), 15 * 2.0);
  EXPECT_DOUBLE_EQ(gradient_flops(p), 15 * (2.0 + 2.0 + 1.0));
}

TEST(GradientFlops, TheTaskCostSplitsItOverThePieces) {
  const pcg::TaskCost whole = test::bundled().task_cost("matmul", {}, {test::pshape({8, 16}), test::pshape({16, 4})});
  const pcg::TaskCost half = test::bundled().task_cost("matmul", {}, {test::pshape({8, 16}, {2, 1}), test::pshape({16, 4}, {1, 1}, 1, 2)});
  EXPECT_DOUBLE_EQ(whole.backward_flops, 2 * whole.flops);
  EXPECT_DOUBLE_EQ(half.backward_flops, whole.backward_flops / 2);
}

// A convolution's windows as one matrix, counted by hand: a row per window position of each
// image, a column per element of a window.
double windows(std::int64_t images, std::int64_t channels, std::int64_t out_h, std::int64_t out_w, std::int64_t kh, std::int64_t kw) {
  return static_cast<double>(images * out_h * out_w) * static_cast<double>(channels * kh * kw);
}

const pcg::AttrMap kStride2 = {{"stride_h", 2}, {"stride_w", 2}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}};

TEST(Cost, AConvolutionUnfoldsEachWindowOnceWhateverItsFilters) {
  // 6 images of 4 channels, 9x9, 3x3 windows of stride 2 and padding 1: 5x5 positions.
  const pcg::TaskCost few = test::bundled().task_cost("conv2d", kStride2, {test::pshape({6, 4, 9, 9}), test::pshape({2, 4, 3, 3})});
  const pcg::TaskCost many = test::bundled().task_cost("conv2d", kStride2, {test::pshape({6, 4, 9, 9}), test::pshape({16, 4, 3, 3})});
  EXPECT_EQ(few.shape, pcg::KernelShape::Convolution);
  EXPECT_DOUBLE_EQ(few.unfolded_elements, windows(6, 4, 5, 5, 3, 3));
  EXPECT_DOUBLE_EQ(many.unfolded_elements, few.unfolded_elements);
  EXPECT_DOUBLE_EQ(many.flops, 8 * few.flops);
  const pcg::TaskCost product = test::bundled().task_cost("matmul", {}, {test::pshape({8, 16}), test::pshape({16, 4})});
  EXPECT_EQ(product.unfolded_elements, 0);
}

TEST(Cost, ATaskUnfoldsItsImagesWindowsAndEveryWindowWhenSplitAlongTheFilters) {
  const std::vector<std::int64_t> x = {6, 4, 9, 9}, w = {8, 4, 3, 3};
  const double whole = windows(6, 4, 5, 5, 3, 3);
  const pcg::TaskCost by_images =
      test::bundled().task_cost("conv2d", kStride2, {test::pshape(x, {2, 1, 1, 1}), test::pshape(w, {1, 1, 1, 1}, 1, 2)});
  const pcg::TaskCost by_filters =
      test::bundled().task_cost("conv2d", kStride2, {test::pshape(x, {1, 1, 1, 1}, 1, 2), test::pshape(w, {2, 1, 1, 1})});
  const pcg::TaskCost by_channels =
      test::bundled().task_cost("conv2d", kStride2, {test::pshape(x, {1, 2, 1, 1}), test::pshape(w, {1, 2, 1, 1})});
  EXPECT_DOUBLE_EQ(by_images.unfolded_elements, whole / 2);
  EXPECT_DOUBLE_EQ(by_filters.unfolded_elements, whole);
  EXPECT_DOUBLE_EQ(by_channels.unfolded_elements, whole / 2);  // each task sums half the channels
  EXPECT_DOUBLE_EQ(by_images.flops, by_filters.flops);
}

TEST(Cost, AGroupedConvolutionUnfoldsEachGroupsWindowsAndADepthwiseOneEachChannels) {
  // 8 channels in 4 groups of 2, 12 filters (3 a group): each group's windows over its 2 channels.
  const pcg::TaskCost grouped =
      test::bundled().task_cost("conv2d_grouped", {{"groups", 4}, {"stride_h", 2}, {"stride_w", 2}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}},
                                {test::pshape({6, 8, 9, 9}), test::pshape({12, 2, 3, 3})});
  EXPECT_DOUBLE_EQ(grouped.unfolded_elements, 4 * windows(6, 2, 5, 5, 3, 3));
  // 8 filters in 4 groups, split 8 ways along the filters: each task still unfolds a whole group's
  // windows, a quarter of them.
  const pcg::TaskCost split_finely =
      test::bundled().task_cost("conv2d_grouped", {{"groups", 4}, {"stride_h", 2}, {"stride_w", 2}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}},
                                {test::pshape({6, 8, 9, 9}, {1, 1, 1, 1}, 1, 8), test::pshape({8, 2, 3, 3}, {8, 1, 1, 1})});
  EXPECT_DOUBLE_EQ(split_finely.unfolded_elements, windows(6, 2, 5, 5, 3, 3));
  const pcg::TaskCost depthwise =
      test::bundled().task_cost("conv2d_depthwise", kStride2, {test::pshape({6, 8, 9, 9}), test::pshape({8, 1, 3, 3})});
  EXPECT_DOUBLE_EQ(depthwise.unfolded_elements, 8 * windows(6, 1, 5, 5, 3, 3));
}

}  // namespace
}  // namespace loom::spec

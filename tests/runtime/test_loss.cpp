// The loss of boxes of an output: the shares of boxes that cover the output add up to its loss and
// their gradients are the boxes of its gradient, so each process can take the loss of the boxes it
// holds.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/loss.hpp"
#include "runtime_test_support.hpp"

namespace loom::runtime {
namespace {

using testing::uniform_tensor;

const std::vector<std::int64_t> kDims{4, 3, 6};

// The box's elements of a [4, 3, 6] tensor, as the piece holding it would.
Tensor<double> cut(const Tensor<double>& whole, const pcg::Region& box) {
  Tensor<double> piece(box.extent());
  std::size_t k = 0;
  for (std::int64_t a = box.lo[0]; a < box.hi[0]; ++a)
    for (std::int64_t b = box.lo[1]; b < box.hi[1]; ++b)
      for (std::int64_t c = box.lo[2]; c < box.hi[2]; ++c)
        piece.data[k++] = whole.data[static_cast<std::size_t>((a * kDims[1] + b) * kDims[2] + c)];
  return piece;
}

// Disjoint boxes covering a [4, 3, 6] tensor; with `split_classes`, the last axis is cut too.
std::vector<pcg::Region> cover(bool split_classes) {
  std::vector<pcg::Region> boxes;
  for (auto [a0, a1] : {std::pair{0, 1}, std::pair{1, 4}})
    for (auto [b0, b1] : {std::pair{0, 2}, std::pair{2, 3}})
      for (auto [c0, c1] : split_classes ? std::vector{std::pair{0, 4}, std::pair{4, 6}} : std::vector{std::pair{0, 6}})
        boxes.push_back({{a0, b0, c0}, {a1, b1, c1}});
  return boxes;
}

void expect_shares_make_the_whole(LossKind kind, const Tensor<double>& output, const Tensor<double>& target, bool probabilities,
                                  bool split_classes) {
  const LossValue<double> whole = compute_loss(kind, output, target, probabilities);
  double total = 0;
  for (const pcg::Region& box : cover(split_classes)) {
    const LossValue<double> share = compute_loss(kind, cut(output, box), box, kDims, target, probabilities);
    total += share.loss;
    EXPECT_EQ(share.grad.dims, box.extent());
    EXPECT_EQ(share.grad.data, cut(whole.grad, box).data)
        << "the gradient of box from " << box.lo[0] << ", " << box.lo[1] << ", " << box.lo[2];
  }
  EXPECT_NEAR(total, whole.loss, 1e-12 * std::abs(whole.loss));
  EXPECT_GT(std::abs(whole.loss), 0);
}

Tensor<double> labels(std::mt19937_64& rng) {
  Tensor<double> t({kDims[0], kDims[1]});
  for (double& v : t.data) v = static_cast<double>(rng() % static_cast<std::uint64_t>(kDims[2]));
  return t;
}

TEST(LossOfBoxes, MeanSquaredErrorSharesMakeTheWholeLoss) {
  std::mt19937_64 rng(3);
  expect_shares_make_the_whole(LossKind::MeanSquaredError, uniform_tensor(kDims, rng), uniform_tensor(kDims, rng), false, true);
}

TEST(LossOfBoxes, CrossEntropySharesOfLogitsMakeTheWholeLoss) {
  std::mt19937_64 rng(4);
  expect_shares_make_the_whole(LossKind::CrossEntropy, uniform_tensor(kDims, rng, -3, 3), labels(rng), false, false);
}

TEST(LossOfBoxes, CrossEntropySharesOfProbabilitiesMakeTheWholeLoss) {
  std::mt19937_64 rng(5);
  expect_shares_make_the_whole(LossKind::CrossEntropy, uniform_tensor(kDims, rng, 0.1, 1), labels(rng), true, false);
}

TEST(LossOfBoxes, CrossEntropyRefusesABoxThatCutsTheClasses) {
  std::mt19937_64 rng(6);
  const Tensor<double> output = uniform_tensor(kDims, rng);
  const pcg::Region box{{0, 0, 0}, {4, 3, 4}};
  try {
    compute_loss(LossKind::CrossEntropy, cut(output, box), box, kDims, labels(rng), false);
    FAIL() << "a box of 4 of the 6 classes was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("span all 6 classes"), std::string::npos) << e.what();
  }
}

// A bad label is named by its row of the whole output, not of the box.
TEST(LossOfBoxes, ABadLabelNamesItsRowOfTheWholeOutput) {
  std::mt19937_64 rng(7);
  const Tensor<double> output = uniform_tensor(kDims, rng);
  Tensor<double> target = labels(rng);
  target.data[1 * 3 + 2] = 9;  // row (1, 2): row 5 of 12
  const pcg::Region box{{1, 2, 0}, {4, 3, 6}};
  try {
    compute_loss(LossKind::CrossEntropy, cut(output, box), box, kDims, target, false);
    FAIL() << "label 9 of 6 classes was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("label 9 of row 5 is not below the 6 classes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::runtime

// The loss of boxes of an output: the shares of boxes that cover the output add up to its loss and
// their gradients are the boxes of its gradient, so each process can take the loss of the boxes it
// holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
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

// The boxes `cover` gives, with their values cut out of `output`.
struct Boxes {
  std::vector<pcg::Region> regions;
  std::vector<Tensor<double>> values;

  Boxes(const Tensor<double>& output, bool split_classes) : regions(cover(split_classes)) {
    for (const pcg::Region& box : regions) values.push_back(cut(output, box));
  }
  std::vector<HeldBox<double>> held(std::size_t from, std::size_t to) const {
    std::vector<HeldBox<double>> out;
    for (std::size_t b = from; b < to; ++b) out.push_back({regions[b], &values[b]});
    return out;
  }
};

// The boxes' loss taken by `processes` processes, each holding an equal run of them, each box's
// share checked against the whole output's loss; where `share_rows`, the processes holding the
// same rows gather their statistics first, as the processes of a run do.
void expect_shares_make_the_whole(LossKind kind, const Tensor<double>& output, const Tensor<double>& target, bool probabilities,
                                  bool split_classes, std::size_t processes = 4, bool share_rows = false) {
  const LossValue<double> whole = compute_loss(kind, output, target, probabilities);
  const Boxes boxes(output, split_classes);
  const std::size_t each = boxes.regions.size() / processes;
  ASSERT_EQ(each * processes, boxes.regions.size());
  std::vector<std::vector<double>> rows(processes);
  if (share_rows) {
    for (std::size_t p = 0; p < processes; ++p) rows[p] = row_statistics(boxes.held(p * each, (p + 1) * each), kDims);
    // Per rows a box holds, the processes holding boxes of them.
    std::map<pcg::Region, std::set<std::size_t>> holders;
    for (std::size_t b = 0; b < boxes.regions.size(); ++b) {
      pcg::Region held_rows = boxes.regions[b];
      held_rows.lo.pop_back();
      held_rows.hi.pop_back();
      holders[held_rows].insert(b / each);
    }
    for (const auto& [held_rows, group] : holders) {
      std::vector<double> gathered;
      for (std::size_t p : group) {
        const std::vector<double> mine = statistics_of_rows(rows[p], held_rows, kDims);
        gathered.insert(gathered.end(), mine.begin(), mine.end());
      }
      const std::vector<double> combined = combined_row_statistics(gathered, held_rows.elements());
      for (std::size_t p : group) put_statistics_of_rows(rows[p], held_rows, kDims, combined);
    }
  }
  double total = 0;
  for (std::size_t p = 0; p < processes; ++p) {
    const LossShare<double> share =
        loss_of_boxes(kind, boxes.held(p * each, (p + 1) * each), kDims, target, probabilities, share_rows ? &rows[p] : nullptr);
    total += share.loss;
    ASSERT_EQ(share.grads.size(), each);
    for (std::size_t b = 0; b < each; ++b) {
      const pcg::Region& box = boxes.regions[p * each + b];
      EXPECT_EQ(share.grads[b].dims, box.extent());
      const std::vector<double> expected = cut(whole.grad, box).data;
      ASSERT_EQ(share.grads[b].data.size(), expected.size());
      for (std::size_t k = 0; k < expected.size(); ++k)
        EXPECT_NEAR(share.grads[b].data[k], expected[k], 1e-15)
            << "element " << k << " of the box from " << box.lo[0] << ", " << box.lo[1] << ", " << box.lo[2];
    }
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

TEST(LossOfBoxes, CrossEntropyOfProbabilitiesCutAlongTheClassesNeedsNoStatistics) {
  std::mt19937_64 rng(8);
  expect_shares_make_the_whole(LossKind::CrossEntropy, uniform_tensor(kDims, rng, 0.1, 1), labels(rng), true, true);
}

// Logits cut along their classes: the processes' row statistics, combined, give each row's softmax.
TEST(LossOfBoxes, CrossEntropyOfLogitsCutAlongTheClassesSharesTheRowsStatistics) {
  for (std::size_t processes : {1, 2, 4, 8}) {
    SCOPED_TRACE(std::to_string(processes) + " processes");
    std::mt19937_64 rng(9);
    // Large logits: each row's sum of exponentials overflows unless taken from its largest.
    Tensor<double> logits = uniform_tensor(kDims, rng, -3, 3);
    for (double& v : logits.data) v += 800;
    // A masked slice: the classes one box holds of row 0, all -inf, add nothing to the row's.
    for (std::size_t c = 0; c < 4; ++c) logits.data[c] = -std::numeric_limits<double>::infinity();
    Tensor<double> target = labels(rng);
    target.data[0] = 5;
    expect_shares_make_the_whole(LossKind::CrossEntropy, logits, target, false, true, processes, true);
  }
}

TEST(LossOfBoxes, RowStatisticsAreEachRowsLargestLogitAndItsSumOfExponentials) {
  std::mt19937_64 rng(10);
  const Tensor<double> logits = uniform_tensor(kDims, rng, -3, 3);
  const Boxes boxes(logits, true);
  std::vector<double> gathered;
  for (std::size_t b = 0; b < boxes.regions.size(); ++b) {
    const std::vector<double> one = row_statistics(boxes.held(b, b + 1), kDims);
    gathered.insert(gathered.end(), one.begin(), one.end());
  }
  const std::vector<double> rows = combined_row_statistics(gathered, 12);
  ASSERT_EQ(rows.size(), 24u);
  for (std::size_t r = 0; r < 12; ++r) {
    const auto first = logits.data.begin() + static_cast<std::ptrdiff_t>(r * 6);
    const double top = *std::max_element(first, first + 6);
    double sum = 0;
    for (auto it = first; it != first + 6; ++it) sum += std::exp(*it - top);
    EXPECT_EQ(rows[2 * r], top) << "row " << r;
    EXPECT_NEAR(rows[2 * r + 1], sum, 1e-14 * sum) << "row " << r;
  }
  try {
    combined_row_statistics(std::vector<double>(25, 0.0), 12);
    FAIL() << "25 numbers were taken for blocks of 12 rows";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("not whole blocks of 12 rows"), std::string::npos) << e.what();
  }
}

TEST(LossOfBoxes, CrossEntropyRefusesLogitsCutAlongTheClassesWithoutTheRowsStatistics) {
  std::mt19937_64 rng(6);
  const Tensor<double> output = uniform_tensor(kDims, rng);
  const pcg::Region box{{0, 0, 0}, {4, 3, 4}};
  const Tensor<double> values = cut(output, box);
  try {
    loss_of_boxes<double>(LossKind::CrossEntropy, {{box, &values}}, kDims, labels(rng), false);
    FAIL() << "a box of 4 of the 6 classes was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("span all 6 classes, or the processes holding it share their rows' statistics"), std::string::npos)
        << e.what();
  }
}

// A bad label is named by its row of the whole output, not of the box.
TEST(LossOfBoxes, ABadLabelNamesItsRowOfTheWholeOutput) {
  std::mt19937_64 rng(7);
  const Tensor<double> output = uniform_tensor(kDims, rng);
  Tensor<double> target = labels(rng);
  target.data[1 * 3 + 2] = 9;  // row (1, 2): row 5 of 12
  const pcg::Region box{{1, 2, 0}, {4, 3, 6}};
  const Tensor<double> values = cut(output, box);
  try {
    loss_of_boxes<double>(LossKind::CrossEntropy, {{box, &values}}, kDims, target, false);
    FAIL() << "label 9 of 6 classes was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("label 9 of row 5 is not below the 6 classes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::runtime

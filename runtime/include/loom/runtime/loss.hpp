#pragma once
// Losses on the graph's first output, averaged over the batch.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/pcg/piece_moves.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/search/output_loss.hpp"

namespace loom::runtime {

using search::loss_from_name;
using search::loss_name;
using search::LossKind;

template <class T>
struct LossValue {
  double loss = 0;
  Tensor<T> grad;  // of the output
};

// MSE: mean over every element of (output - target)^2, target of the output's shape.
// Cross-entropy: output [..., classes] of logits (softmax taken here) or, with
// `output_is_probabilities` (the graph ends in softmax), of probabilities; target [...] holds class
// numbers; the mean over rows of -log p[class].
template <class T>
LossValue<T> compute_loss(LossKind kind, const Tensor<T>& output, const Tensor<double>& target, bool output_is_probabilities);

// A box of the output that a process holds, and its values (the box's extent, row-major).
template <class T>
struct HeldBox {
  pcg::Region box;
  const Tensor<T>* values = nullptr;
};

template <class T>
struct LossShare {
  double loss = 0;
  std::vector<Tensor<T>> grads;  // of each box, in the boxes' order
};

// Cross-entropy on logits whose boxes cut the class axis among processes: the statistics of each
// row of an output of `dims` over the classes `boxes` hold (search::kRowStatistics numbers a row, in
// row order: the largest logit, and the sum of exp(logit - largest); -inf and 0 for a row none of
// the boxes hold).
template <class T>
std::vector<double> row_statistics(const std::vector<HeldBox<T>>& boxes, const std::vector<std::int64_t>& dims);

// The statistics of the rows in `rows` (a region of the output without its class axis), in
// row-major order, out of every row's (`all`, row_statistics' layout); and `some`, in that order,
// put back into every row's.
std::vector<double> statistics_of_rows(const std::vector<double>& all, const pcg::Region& rows, const std::vector<std::int64_t>& dims);
void put_statistics_of_rows(std::vector<double>& all, const pcg::Region& rows, const std::vector<std::int64_t>& dims,
                            const std::vector<double>& some);

// The statistics of the same rows from every process of a group (search::RowStatisticsGroup),
// concatenated (an all-gather), made each row's over all their classes. Throws LoomError where
// `gathered` is not whole blocks of `rows` rows.
std::vector<double> combined_row_statistics(const std::vector<double>& gathered, std::int64_t rows);

// The share of the loss that `boxes` of an output of `dims` give, `target` being whole, with the
// gradient of each box. The shares of disjoint boxes that cover the output add up to the loss, and
// their gradients are the boxes of its gradient, so each process of a distributed run takes the loss
// of the output boxes it holds. Cross-entropy on logits needs, for boxes that do not span the class
// axis, `rows_over_all_classes` (combined_row_statistics; throws LoomError without them).
template <class T>
LossShare<T> loss_of_boxes(LossKind kind, const std::vector<HeldBox<T>>& boxes, const std::vector<std::int64_t>& dims,
                           const Tensor<double>& target, bool output_is_probabilities,
                           const std::vector<double>* rows_over_all_classes = nullptr);

}  // namespace loom::runtime

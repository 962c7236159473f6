#include "loom/runtime/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/output_loss.hpp"
#include "piece_regions.hpp"

namespace loom::runtime {

namespace {

// Adds the statistics (`largest`, `total`) of some classes of a row into the row's (`top`, `sum`).
void merge_row(double& top, double& sum, double largest, double total) {
  if (total == 0) return;
  if (largest > top) {
    sum = sum * std::exp(top - largest) + total;
    top = largest;
  } else {
    sum += total * std::exp(largest - top);
  }
}

// The largest of `n` logits from `row` and the sum of exp(logit - largest): -inf and 0 where every
// one is -inf (a masked slice of classes), which adds nothing to the row's.
template <class T>
std::pair<double, double> slice_statistics(const T* row, std::size_t n) {
  const double largest = n == 0 ? -std::numeric_limits<double>::infinity() : *std::max_element(row, row + n);
  if (largest == -std::numeric_limits<double>::infinity()) return {largest, 0.0};
  double total = 0;
  for (std::size_t c = 0; c < n; ++c) total += std::exp(row[c] - largest);
  return {largest, total};
}

// Calls `visit(row of the output, row of the box, first class of the box, classes of the box)` for
// every row of `box`, an output of `dims`.
template <class Visit>
void for_each_row_of_box(const pcg::Region& box, const std::vector<std::int64_t>& dims, Visit&& visit) {
  pcg::Region row_box = box, all_rows = pcg::whole_region(dims);
  std::size_t first = 0, width = 1;
  if (!dims.empty()) {
    first = static_cast<std::size_t>(box.lo.back());
    width = static_cast<std::size_t>(box.hi.back() - box.lo.back());
    for (pcg::Region* r : {&row_box, &all_rows}) {
      r->lo.pop_back();
      r->hi.pop_back();
    }
  }
  for_each_run_in_box(all_rows, row_box, [&](std::size_t at, std::size_t i, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) visit(at + k, i + k, first, width);
  });
}

template <class T>
void check_box(const HeldBox<T>& held) {
  if (!held.values || held.values->dims != held.box.extent()) throw LoomError("loss: a box's values do not have the box's extent");
}

}  // namespace

template <class T>
LossValue<T> compute_loss(LossKind kind, const Tensor<T>& output, const Tensor<double>& target, bool output_is_probabilities) {
  LossShare<T> share = loss_of_boxes<T>(kind, {{pcg::whole_region(output.dims), &output}}, output.dims, target, output_is_probabilities);
  return {share.loss, std::move(share.grads.front())};
}

template <class T>
std::vector<double> row_statistics(const std::vector<HeldBox<T>>& boxes, const std::vector<std::int64_t>& dims) {
  std::vector<double> stats;
  stats.reserve(static_cast<std::size_t>(search::output_rows(dims) * search::kRowStatistics));
  for (std::int64_t r = 0; r < search::output_rows(dims); ++r) stats.insert(stats.end(), {-std::numeric_limits<double>::infinity(), 0.0});
  for (const HeldBox<T>& held : boxes) {
    check_box(held);
    for_each_row_of_box(held.box, dims, [&](std::size_t at, std::size_t i, std::size_t, std::size_t width) {
      const auto [largest, total] = slice_statistics(held.values->data.data() + i * width, width);
      merge_row(stats[search::kRowStatistics * at], stats[search::kRowStatistics * at + 1], largest, total);
    });
  }
  return stats;
}

namespace {

// row_statistics' layout as a tensor: the output's dimensions but the class axis, then the numbers
// of each row; and `rows` as a box of it.
std::vector<std::int64_t> statistics_dims(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> out(dims.begin(), dims.empty() ? dims.end() : dims.end() - 1);
  out.push_back(search::kRowStatistics);
  return out;
}

pcg::Region statistics_box(pcg::Region rows) {
  rows.lo.push_back(0);
  rows.hi.push_back(search::kRowStatistics);
  return rows;
}

}  // namespace

std::vector<double> statistics_of_rows(const std::vector<double>& all, const pcg::Region& rows, const std::vector<std::int64_t>& dims) {
  std::vector<double> some;
  const pcg::Region whole = pcg::whole_region(statistics_dims(dims));
  for_each_run_in_box(whole, statistics_box(rows), [&](std::size_t at, std::size_t, std::size_t n) {
    some.insert(some.end(), all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + n));
  });
  return some;
}

void put_statistics_of_rows(std::vector<double>& all, const pcg::Region& rows, const std::vector<std::int64_t>& dims,
                            const std::vector<double>& some) {
  const pcg::Region whole = pcg::whole_region(statistics_dims(dims));
  for_each_run_in_box(whole, statistics_box(rows), [&](std::size_t at, std::size_t i, std::size_t n) {
    std::copy_n(some.begin() + static_cast<std::ptrdiff_t>(i), n, all.begin() + static_cast<std::ptrdiff_t>(at));
  });
}

std::vector<double> combined_row_statistics(const std::vector<double>& gathered, std::int64_t rows) {
  const auto block = static_cast<std::size_t>(rows * search::kRowStatistics);
  if (block == 0 && gathered.empty()) return {};
  if (block == 0 || gathered.size() % block != 0)
    throw LoomError("cross-entropy: " + std::to_string(gathered.size()) + " row statistics are not whole blocks of " +
                    std::to_string(rows) + " rows");
  std::vector<double> stats(gathered.begin(), gathered.begin() + static_cast<std::ptrdiff_t>(block));
  for (std::size_t from = block; from < gathered.size(); from += block)
    for (std::size_t r = 0; r < block; r += search::kRowStatistics)
      merge_row(stats[r], stats[r + 1], gathered[from + r], gathered[from + r + 1]);
  return stats;
}

template <class T>
LossShare<T> loss_of_boxes(LossKind kind, const std::vector<HeldBox<T>>& boxes, const std::vector<std::int64_t>& dims,
                           const Tensor<double>& target, bool output_is_probabilities, const std::vector<double>* rows_over_all_classes) {
  LossShare<T> result;
  for (const HeldBox<T>& held : boxes) {
    check_box(held);
    result.grads.emplace_back(held.values->dims);
  }
  const pcg::Region whole = pcg::whole_region(dims);
  const auto elements = static_cast<std::size_t>(whole.elements());
  if (kind == LossKind::MeanSquaredError) {
    if (target.size() != elements)
      throw LoomError("mse: the target has " + std::to_string(target.size()) + " elements, the output " + std::to_string(elements));
    const double scale = 1.0 / static_cast<double>(std::max<std::size_t>(elements, 1));
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      const std::vector<T>& piece = boxes[b].values->data;
      std::vector<T>& grad = result.grads[b].data;
      for_each_run_in_box(whole, boxes[b].box, [&](std::size_t at, std::size_t i, std::size_t n) {
        for (std::size_t k = 0; k < n; ++k) {
          const double d = static_cast<double>(piece[i + k]) - target.data[at + k];
          result.loss += d * d * scale;
          grad[i + k] = static_cast<T>(2 * d * scale);
        }
      });
    }
    return result;
  }
  const std::size_t classes = dims.empty() ? 1 : static_cast<std::size_t>(dims.back());
  const auto rows = static_cast<std::size_t>(search::output_rows(dims));
  if (target.size() != rows)
    throw LoomError("cross-entropy: " + std::to_string(target.size()) + " labels for " + std::to_string(rows) + " rows");
  if (rows_over_all_classes && rows_over_all_classes->size() != rows * search::kRowStatistics)
    throw LoomError("cross-entropy: statistics of " + std::to_string(rows_over_all_classes->size() / search::kRowStatistics) +
                    " rows for " + std::to_string(rows));
  const double scale = 1.0 / static_cast<double>(std::max<std::size_t>(rows, 1));
  std::vector<double> exponentials(classes);  // of a row's logits, from its largest
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    const HeldBox<T>& held = boxes[b];
    for_each_row_of_box(held.box, dims, [&](std::size_t at, std::size_t i, std::size_t first, std::size_t width) {
      if (!output_is_probabilities && !rows_over_all_classes && width != classes)
        throw LoomError("cross-entropy: a box of the output must span all " + std::to_string(classes) +
                        " classes, or the processes holding it share their rows' statistics");
      const T* row = held.values->data.data() + i * width;
      T* grad = result.grads[b].data.data() + i * width;
      const auto label = static_cast<std::size_t>(target.data[at]);
      if (label >= classes)
        throw LoomError("cross-entropy: label " + std::to_string(label) + " of row " + std::to_string(at) + " is not below the " +
                        std::to_string(classes) + " classes");
      const bool holds_label = label >= first && label < first + width;
      if (output_is_probabilities) {
        if (!holds_label) return;
        const double p = row[label - first];
        result.loss -= std::log(p) * scale;
        grad[label - first] = static_cast<T>(-scale / p);
        return;
      }
      double top = 0, total = 0;
      if (rows_over_all_classes) {
        top = (*rows_over_all_classes)[search::kRowStatistics * at];
        total = (*rows_over_all_classes)[search::kRowStatistics * at + 1];
        for (std::size_t c = 0; c < width; ++c) exponentials[c] = std::exp(row[c] - top);
      } else {  // the whole row here: each exponential taken once, for the sum and the gradient
        top = *std::max_element(row, row + width);
        for (std::size_t c = 0; c < width; ++c) total += exponentials[c] = std::exp(row[c] - top);
      }
      if (holds_label) result.loss -= (row[label - first] - top - std::log(total)) * scale;
      for (std::size_t c = 0; c < width; ++c)
        grad[c] = static_cast<T>((exponentials[c] / total - (first + c == label ? 1.0 : 0.0)) * scale);
    });
  }
  return result;
}

template LossValue<float> compute_loss<float>(LossKind, const Tensor<float>&, const Tensor<double>&, bool);
template LossValue<double> compute_loss<double>(LossKind, const Tensor<double>&, const Tensor<double>&, bool);
template std::vector<double> row_statistics<float>(const std::vector<HeldBox<float>>&, const std::vector<std::int64_t>&);
template std::vector<double> row_statistics<double>(const std::vector<HeldBox<double>>&, const std::vector<std::int64_t>&);
template LossShare<float> loss_of_boxes<float>(LossKind, const std::vector<HeldBox<float>>&, const std::vector<std::int64_t>&,
                                               const Tensor<double>&, bool, const std::vector<double>*);
template LossShare<double> loss_of_boxes<double>(LossKind, const std::vector<HeldBox<double>>&, const std::vector<std::int64_t>&,
                                                 const Tensor<double>&, bool, const std::vector<double>*);

}  // namespace loom::runtime

#include "loom/runtime/loss.hpp"

#include <algorithm>
#include <cmath>

#include "loom/pcg/diagnostic.hpp"
#include "piece_regions.hpp"

namespace loom::runtime {

LossKind loss_from_name(const std::string& name) {
  if (name == "mse") return LossKind::MeanSquaredError;
  if (name == "cross-entropy") return LossKind::CrossEntropy;
  throw LoomError("unknown loss '" + name + "' (expected mse or cross-entropy)");
}

std::string loss_name(LossKind kind) { return kind == LossKind::MeanSquaredError ? "mse" : "cross-entropy"; }

template <class T>
LossValue<T> compute_loss(LossKind kind, const Tensor<T>& output, const Tensor<double>& target, bool output_is_probabilities) {
  return compute_loss(kind, output, pcg::whole_region(output.dims), output.dims, target, output_is_probabilities);
}

template <class T>
LossValue<T> compute_loss(LossKind kind, const Tensor<T>& piece, const pcg::Region& box, const std::vector<std::int64_t>& dims,
                          const Tensor<double>& target, bool output_is_probabilities) {
  LossValue<T> result{0, Tensor<T>(piece.dims)};
  const pcg::Region whole = pcg::whole_region(dims);
  const auto elements = static_cast<std::size_t>(whole.elements());
  if (kind == LossKind::MeanSquaredError) {
    if (target.size() != elements)
      throw LoomError("mse: the target has " + std::to_string(target.size()) + " elements, the output " + std::to_string(elements));
    const double scale = 1.0 / static_cast<double>(std::max<std::size_t>(elements, 1));
    for_each_run_in_box(whole, box, [&](std::size_t at, std::size_t i, std::size_t n) {
      for (std::size_t k = 0; k < n; ++k) {
        const double d = static_cast<double>(piece.data[i + k]) - target.data[at + k];
        result.loss += d * d * scale;
        result.grad.data[i + k] = static_cast<T>(2 * d * scale);
      }
    });
    return result;
  }
  const std::size_t classes = dims.empty() ? 1 : static_cast<std::size_t>(dims.back());
  const std::size_t rows = elements / std::max<std::size_t>(classes, 1);
  if (target.size() != rows)
    throw LoomError("cross-entropy: " + std::to_string(target.size()) + " labels for " + std::to_string(rows) + " rows");
  pcg::Region row_box = box, all_rows = whole;
  if (!dims.empty()) {
    if (box.lo.back() != 0 || static_cast<std::size_t>(box.hi.back()) != classes)
      throw LoomError("cross-entropy: a box of the output must span all " + std::to_string(classes) + " classes");
    for (pcg::Region* r : {&row_box, &all_rows}) {
      r->lo.pop_back();
      r->hi.pop_back();
    }
  }
  const double scale = 1.0 / static_cast<double>(std::max<std::size_t>(rows, 1));
  // Runs of whole rows: `at` counts rows of the output, `i` rows of the box.
  for_each_run_in_box(all_rows, row_box, [&](std::size_t at, std::size_t i, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) {
      const T* row = piece.data.data() + (i + k) * classes;
      T* grad = result.grad.data.data() + (i + k) * classes;
      const auto label = static_cast<std::size_t>(target.data[at + k]);
      if (label >= classes)
        throw LoomError("cross-entropy: label " + std::to_string(label) + " of row " + std::to_string(at + k) + " is not below the " +
                        std::to_string(classes) + " classes");
      if (output_is_probabilities) {
        const double p = row[label];
        result.loss -= std::log(p) * scale;
        std::fill(grad, grad + classes, T(0));
        grad[label] = static_cast<T>(-scale / p);
        continue;
      }
      const double top = *std::max_element(row, row + classes);
      double total = 0;
      for (std::size_t c = 0; c < classes; ++c) total += std::exp(row[c] - top);
      result.loss -= (row[label] - top - std::log(total)) * scale;
      for (std::size_t c = 0; c < classes; ++c)
        grad[c] = static_cast<T>((std::exp(row[c] - top) / total - (c == label ? 1.0 : 0.0)) * scale);
    }
  });
  return result;
}

template LossValue<float> compute_loss<float>(LossKind, const Tensor<float>&, const Tensor<double>&, bool);
template LossValue<double> compute_loss<double>(LossKind, const Tensor<double>&, const Tensor<double>&, bool);
template LossValue<float> compute_loss<float>(LossKind, const Tensor<float>&, const pcg::Region&, const std::vector<std::int64_t>&,
                                              const Tensor<double>&, bool);
template LossValue<double> compute_loss<double>(LossKind, const Tensor<double>&, const pcg::Region&, const std::vector<std::int64_t>&,
                                                const Tensor<double>&, bool);

}  // namespace loom::runtime

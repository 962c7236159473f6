#include "loom/runtime/loss.hpp"

#include <algorithm>
#include <cmath>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {

LossKind loss_from_name(const std::string& name) {
  if (name == "mse") return LossKind::MeanSquaredError;
  if (name == "cross-entropy") return LossKind::CrossEntropy;
  throw LoomError("unknown loss '" + name + "' (expected mse or cross-entropy)");
}

std::string loss_name(LossKind kind) { return kind == LossKind::MeanSquaredError ? "mse" : "cross-entropy"; }

template <class T>
LossValue<T> compute_loss(LossKind kind, const Tensor<T>& output, const Tensor<double>& target, bool output_is_probabilities) {
  LossValue<T> result{0, Tensor<T>(output.dims)};
  if (kind == LossKind::MeanSquaredError) {
    if (target.size() != output.size()) throw LoomError("mse: the target has " + std::to_string(target.size()) +
                                                        " elements, the output " + std::to_string(output.size()));
    const double scale = 1.0 / static_cast<double>(std::max<std::size_t>(output.size(), 1));
    for (std::size_t i = 0; i < output.size(); ++i) {
      const double d = static_cast<double>(output.data[i]) - target.data[i];
      result.loss += d * d * scale;
      result.grad.data[i] = static_cast<T>(2 * d * scale);
    }
    return result;
  }
  const std::size_t classes = output.dims.empty() ? 1 : static_cast<std::size_t>(output.dims.back());
  const std::size_t rows = output.size() / classes;
  if (target.size() != rows)
    throw LoomError("cross-entropy: " + std::to_string(target.size()) + " labels for " + std::to_string(rows) + " rows");
  const double scale = 1.0 / static_cast<double>(std::max<std::size_t>(rows, 1));
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = output.data.data() + r * classes;
    T* grad = result.grad.data.data() + r * classes;
    const auto label = static_cast<std::size_t>(target.data[r]);
    if (label >= classes) throw LoomError("cross-entropy: label " + std::to_string(label) + " of row " + std::to_string(r) +
                                          " is not below the " + std::to_string(classes) + " classes");
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
  return result;
}

template LossValue<float> compute_loss<float>(LossKind, const Tensor<float>&, const Tensor<double>&, bool);
template LossValue<double> compute_loss<double>(LossKind, const Tensor<double>&, const Tensor<double>&, bool);

}  // namespace loom::runtime

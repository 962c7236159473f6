#pragma once
// Losses on the graph's first output, averaged over the batch.
#include <string>

#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

enum class LossKind { MeanSquaredError, CrossEntropy };

// "mse" or "cross-entropy"; throws LoomError naming the text otherwise.
LossKind loss_from_name(const std::string& name);
std::string loss_name(LossKind kind);

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

}  // namespace loom::runtime

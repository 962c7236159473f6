#pragma once
// Losses on the graph's first output, averaged over the batch.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/pcg/piece_moves.hpp"
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

// The share of the loss that `box` of an output of `dims` gives, `piece` holding that box and
// `target` being whole, with the gradient of the box. The shares of disjoint boxes that cover the
// output add up to the loss, and their gradients are the boxes of its gradient, so each process of
// a distributed run takes the loss of the output boxes it holds. Cross-entropy needs boxes that
// span the class axis (throws LoomError otherwise).
template <class T>
LossValue<T> compute_loss(LossKind kind, const Tensor<T>& piece, const pcg::Region& box, const std::vector<std::int64_t>& dims,
                          const Tensor<double>& target, bool output_is_probabilities);

}  // namespace loom::runtime

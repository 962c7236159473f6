#pragma once
// SGD and Adam over named parameters.
#include <cstdint>
#include <string>

#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

enum class OptimizerKind { Sgd, Adam };

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::Sgd;
  double learning_rate = 0.01;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // Adam
};

// "sgd" (lr 0.01) or "adam" (lr 0.001); throws LoomError naming the text otherwise.
OptimizerSettings optimizer_from_name(const std::string& name);
std::string optimizer_name(OptimizerKind kind);

// The optimizer's state, kept in checkpoints.
template <class T>
struct OptimizerState {
  std::int64_t steps = 0;
  NamedTensors<T> first_moment, second_moment;  // Adam
};

template <class T>
class Optimizer {
 public:
  explicit Optimizer(OptimizerSettings settings, OptimizerState<T> state = {}) : settings_(settings), state_(std::move(state)) {}

  // Updates every parameter that has a gradient; `params` may hold other tensors too.
  void step(NamedTensors<T>& params, const NamedTensors<T>& grads);
  const OptimizerState<T>& state() const { return state_; }

 private:
  OptimizerSettings settings_;
  OptimizerState<T> state_;
};

}  // namespace loom::runtime

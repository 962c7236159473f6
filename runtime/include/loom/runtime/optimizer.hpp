#pragma once
// SGD and Adam over named parameters.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// Elements [begin, end) of a tensor's row-major data.
struct ElementRange {
  std::size_t begin = 0, end = 0;
  bool operator==(const ElementRange&) const = default;
};
using ElementRanges = std::map<std::string, std::vector<ElementRange>>;

template <class T>
class Optimizer {
 public:
  explicit Optimizer(OptimizerSettings settings, OptimizerState<T> state = {}) : settings_(settings), state_(std::move(state)) {}

  // Updates every parameter that has a gradient; `params` may hold other tensors too. With `only`,
  // a parameter is updated in its listed ranges alone, and not at all when it has none: a process
  // of a distributed run updates the elements it reads. With `seconds`, adds the time each
  // parameter's update took to its entry (a parameter updated nowhere here has none).
  void step(NamedTensors<T>& params, const NamedTensors<T>& grads, const ElementRanges* only = nullptr,
            std::map<std::string, double>* seconds = nullptr);
  const OptimizerState<T>& state() const { return state_; }

 private:
  OptimizerSettings settings_;
  OptimizerState<T> state_;
};

}  // namespace loom::runtime

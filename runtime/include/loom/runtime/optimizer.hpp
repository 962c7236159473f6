#pragma once
// SGD and Adam over named parameters, updated where they lie: a parameter a backend holds in its
// device memory, or whose gradient lies there, is updated there, with its moments kept beside it.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/runtime/tensor.hpp"
#include "loom/runtime/value.hpp"

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

// One update of elements `range` in host memory: the rules every backend's update follows.
template <class T>
void sgd_update(T* w, const T* g, T learning_rate, ElementRange range) {
  for (std::size_t i = range.begin; i < range.end; ++i) w[i] -= learning_rate * g[i];
}
template <class T>
void adam_update(T* w, const T* g, T* m, T* v, const AdamStep<T>& s, ElementRange range) {
  for (std::size_t i = range.begin; i < range.end; ++i) {
    m[i] = s.beta1 * m[i] + (T(1) - s.beta1) * g[i];
    v[i] = s.beta2 * v[i] + (T(1) - s.beta2) * g[i] * g[i];
    w[i] -= s.learning_rate * (m[i] / s.correction1) / (std::sqrt(v[i] / s.correction2) + s.epsilon);
  }
}

template <class T>
class Optimizer {
 public:
  explicit Optimizer(OptimizerSettings settings, OptimizerState<T> state = {})
      : settings_(settings),
        steps_(state.steps),
        first_moment_(to_values(std::move(state.first_moment))),
        second_moment_(to_values(std::move(state.second_moment))) {}

  // Updates every parameter that has a gradient; `params` may hold other tensors too. With `only`,
  // a parameter is updated in its listed ranges alone, and not at all when it has none: a process
  // of a distributed run updates the elements it reads. With `seconds`, adds the time each
  // parameter's update took to its entry (a parameter updated nowhere here has none).
  void step(NamedValues<T>& params, const NamedValues<T>& grads, const ElementRanges* only = nullptr,
            std::map<std::string, double>* seconds = nullptr);
  // The same over host tensors.
  void step(NamedTensors<T>& params, const NamedTensors<T>& grads, const ElementRanges* only = nullptr,
            std::map<std::string, double>* seconds = nullptr);
  // Its state in host memory.
  OptimizerState<T> state() const { return {steps_, to_host(first_moment_), to_host(second_moment_)}; }
  // Its moments where they lie, to be made whole across processes (ShardedExecutor::assemble).
  NamedValues<T>& first_moment() { return first_moment_; }
  NamedValues<T>& second_moment() { return second_moment_; }

 private:
  OptimizerSettings settings_;
  std::int64_t steps_ = 0;
  NamedValues<T> first_moment_, second_moment_;
};

}  // namespace loom::runtime

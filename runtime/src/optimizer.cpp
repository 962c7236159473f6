#include "loom/runtime/optimizer.hpp"

#include <chrono>
#include <cmath>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {

OptimizerSettings optimizer_from_name(const std::string& name) {
  if (name == "sgd") return {OptimizerKind::Sgd, 0.01};
  if (name == "adam") return {OptimizerKind::Adam, 0.001};
  throw LoomError("unknown optimizer '" + name + "' (expected sgd or adam)");
}

std::string optimizer_name(OptimizerKind kind) { return kind == OptimizerKind::Sgd ? "sgd" : "adam"; }

template <class T>
void Optimizer<T>::step(NamedTensors<T>& params, const NamedTensors<T>& grads, const ElementRanges* only,
                        std::map<std::string, double>* seconds) {
  ++state_.steps;
  const T lr = static_cast<T>(settings_.learning_rate);
  const T b1 = static_cast<T>(settings_.beta1), b2 = static_cast<T>(settings_.beta2), eps = static_cast<T>(settings_.epsilon);
  const T correction1 = T(1) - static_cast<T>(std::pow(settings_.beta1, static_cast<double>(state_.steps)));
  const T correction2 = T(1) - static_cast<T>(std::pow(settings_.beta2, static_cast<double>(state_.steps)));
  for (const auto& [name, g] : grads) {
    auto it = params.find(name);
    if (it == params.end()) throw LoomError("optimizer: no parameter '" + name + "' for its gradient");
    const auto start = std::chrono::steady_clock::now();
    std::vector<T>& w = it->second.data;
    std::vector<ElementRange> ranges{{0, w.size()}};
    if (only) {
      auto listed = only->find(name);
      ranges = listed == only->end() ? std::vector<ElementRange>{} : listed->second;
    }
    if (settings_.kind == OptimizerKind::Sgd) {
      for (const ElementRange& r : ranges)
        for (std::size_t i = r.begin; i < r.end; ++i) w[i] -= lr * g.data[i];
    } else {
      auto& m = state_.first_moment.try_emplace(name, g.dims, T(0)).first->second.data;
      auto& v = state_.second_moment.try_emplace(name, g.dims, T(0)).first->second.data;
      for (const ElementRange& r : ranges)
        for (std::size_t i = r.begin; i < r.end; ++i) {
          m[i] = b1 * m[i] + (T(1) - b1) * g.data[i];
          v[i] = b2 * v[i] + (T(1) - b2) * g.data[i] * g.data[i];
          w[i] -= lr * (m[i] / correction1) / (std::sqrt(v[i] / correction2) + eps);
        }
    }
    if (seconds && !ranges.empty()) (*seconds)[name] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace loom::runtime

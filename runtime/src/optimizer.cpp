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
void Optimizer<T>::step(NamedValues<T>& params, const NamedValues<T>& grads, const ElementRanges* only,
                        std::map<std::string, double>* seconds) {
  ++steps_;
  const T lr = static_cast<T>(settings_.learning_rate);
  const AdamStep<T> adam{lr,
                         static_cast<T>(settings_.beta1),
                         static_cast<T>(settings_.beta2),
                         static_cast<T>(settings_.epsilon),
                         T(1) - static_cast<T>(std::pow(settings_.beta1, static_cast<double>(steps_))),
                         T(1) - static_cast<T>(std::pow(settings_.beta2, static_cast<double>(steps_)))};
  for (const auto& [name, g] : grads) {
    auto it = params.find(name);
    if (it == params.end()) throw LoomError("optimizer: no parameter '" + name + "' for its gradient");
    const auto start = std::chrono::steady_clock::now();
    Value<T>& w = it->second;
    std::vector<ElementRange> ranges{{0, w.size()}};
    if (only) {
      auto listed = only->find(name);
      ranges = listed == only->end() ? std::vector<ElementRange>{} : listed->second;
    }
    // Adam's moments start at zero, where the parameter lies.
    const auto moment = [&](NamedValues<T>& moments) -> Value<T>& {
      auto [at, made] = moments.try_emplace(name);
      if (made) at->second = zeros_like(g.dims(), &w);
      return at->second;
    };
    // A parameter moves to the device its gradient was computed on (when it updates anything
    // here), and stays there.
    const DeviceArray<T>* held = w.device() ? w.device() : ranges.empty() ? nullptr : g.device();
    if (held) {
      const DeviceMemory<T>& memory = held->memory();
      const DeviceArray<T>& grad = g.on(memory);
      DeviceArray<T>& weights = w.on_mut(memory);
      if (settings_.kind == OptimizerKind::Sgd) {
        for (const ElementRange& r : ranges) memory.sgd(weights, grad, lr, r);
      } else {
        DeviceArray<T>& m = moment(first_moment_).on_mut(memory);
        DeviceArray<T>& v = moment(second_moment_).on_mut(memory);
        for (const ElementRange& r : ranges) memory.adam(weights, grad, m, v, adam, r);
      }
    } else {
      T* weights = w.host_mut().data.data();
      const T* grad = ranges.empty() ? nullptr : g.host().data.data();
      if (settings_.kind == OptimizerKind::Sgd) {
        for (const ElementRange& r : ranges) sgd_update(weights, grad, lr, r);
      } else {
        T* m = moment(first_moment_).host_mut().data.data();
        T* v = moment(second_moment_).host_mut().data.data();
        for (const ElementRange& r : ranges) adam_update(weights, grad, m, v, adam, r);
      }
    }
    if (seconds && !ranges.empty()) (*seconds)[name] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

template <class T>
void Optimizer<T>::step(NamedTensors<T>& params, const NamedTensors<T>& grads, const ElementRanges* only,
                        std::map<std::string, double>* seconds) {
  NamedValues<T> values = to_values(params);
  step(values, to_values(grads), only, seconds);
  params = to_host(values);
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace loom::runtime

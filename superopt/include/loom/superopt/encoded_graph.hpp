#pragma once
// The compact graph form of the enumeration: a list of steps (an operator instance applied to
// earlier tensors) and one output tensor. Tensors are graph inputs (by index) or node ports.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "loom/superopt/hash.hpp"
#include "loom/superopt/op_set.hpp"

namespace loom::superopt {

using TensorRef = std::uint16_t;
inline constexpr TensorRef kNodeRefBase = 0x8000;
inline constexpr std::size_t kMaxPorts = 32;

constexpr bool is_input_ref(TensorRef r) { return r < kNodeRefBase; }
constexpr TensorRef input_ref(std::size_t input) { return static_cast<TensorRef>(input); }
constexpr TensorRef node_ref(std::size_t node, std::size_t port) {
  return static_cast<TensorRef>(kNodeRefBase | (node * kMaxPorts) | port);
}
constexpr std::size_t input_of(TensorRef r) { return r; }
constexpr std::size_t node_of(TensorRef r) { return (r & ~kNodeRefBase) / kMaxPorts; }
constexpr std::size_t port_of(TensorRef r) { return (r & ~kNodeRefBase) % kMaxPorts; }

struct Step {
  std::uint16_t inst = 0;  // index into the OpSet
  std::uint8_t argc = 0;
  std::array<TensorRef, kMaxOpInputs> args{};

  bool operator==(const Step& o) const {
    if (inst != o.inst || argc != o.argc) return false;
    for (std::size_t i = 0; i < argc; ++i)
      if (args[i] != o.args[i]) return false;
    return true;
  }
};

// No tensor: the second output of a graph with one.
inline constexpr TensorRef kNoTensor = kNodeRefBase - 1;

// A graph with one output, or two (`second`): the two sides of a merge, such as two operators
// reading one input against one operator and a split. A single output may be a graph input
// itself (a graph of no operators).
struct GraphView {
  std::vector<Step> steps;
  TensorRef output = 0;
  TensorRef second = kNoTensor;

  std::size_t size() const { return steps.size(); }
  bool has_two_outputs() const { return second != kNoTensor; }
  std::vector<TensorRef> outputs() const {
    return has_two_outputs() ? std::vector<TensorRef>{output, second} : std::vector<TensorRef>{output};
  }
  bool operator==(const GraphView&) const = default;
};

// Identity of a graph up to the order of its steps: equal keys mean the same operators applied
// to the same tensors. `renaming[i]` is the input that input i stands for (null: none).
std::vector<Key128> node_keys(const GraphView& view, const std::vector<std::size_t>* renaming = nullptr);
Key128 input_key(std::size_t input);
Key128 port_key(const Key128& node, std::size_t port);
Key128 view_key(const GraphView& view, const std::vector<std::size_t>* renaming = nullptr);

// The same graph with its steps in one canonical order (post-order from the outputs, arguments
// left to right), dropping steps no output depends on.
GraphView canonical_order(const GraphView& view);

// The graph inputs the view reads, ascending.
std::vector<std::size_t> used_inputs(const GraphView& view);

// Number of steps whose instance satisfies `pred`.
template <class Pred>
std::size_t count_steps(const GraphView& view, Pred&& pred) {
  std::size_t n = 0;
  for (const Step& s : view.steps)
    if (pred(s.inst)) ++n;
  return n;
}

}  // namespace loom::superopt

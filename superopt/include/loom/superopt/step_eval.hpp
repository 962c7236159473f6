#pragma once
// Applies operator instances to values with the spec interpreter, for the enumeration (exact
// modular arithmetic) and the checks (double precision). Ops run their compiled comprehension;
// parallel and fused forms go through the interpreter's term evaluator. Type checks are
// Library::infer, cached per thread: one evaluator must not be shared between threads.
#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/program.hpp"
#include "loom/interpreter/tensor.hpp"
#include "loom/superopt/encoded_graph.hpp"
#include "loom/superopt/op_set.hpp"

namespace loom::superopt {

// A tensor of the enumeration: its parallel shape (interned: equal shapes share one address)
// and its logical value.
template <class V>
struct Value {
  const pcg::ParallelShape* shape = nullptr;
  std::shared_ptr<const spec::Tensor<V>> tensor;
};

template <class Domain>
class StepEvaluator {
 public:
  using V = typename Domain::Value;

  StepEvaluator(const spec::Library& library, const OpSet& ops) : library_(library), ops_(ops) {}
  StepEvaluator(const StepEvaluator&) = delete;
  StepEvaluator& operator=(const StepEvaluator&) = delete;

  const pcg::ParallelShape* intern(const pcg::ParallelShape& shape);

  // Output shapes of instance `inst` on inputs of these shapes, or null when the library
  // rejects them. Never throws.
  const std::vector<const pcg::ParallelShape*>* infer(std::size_t inst, const pcg::ParallelShape* const* inputs, std::size_t count);

  // Values of the instance's outputs; the inputs must be accepted by infer().
  std::vector<Value<V>> apply(std::size_t inst, const Value<V>* inputs, std::size_t count);

  // Every node port of the graph on these input values, node by node; with `replaced`, the
  // ports of node replaced->first take the values replaced->second instead of being computed.
  std::vector<std::vector<Value<V>>> run(const GraphView& view, const std::vector<Value<V>>& inputs,
                                         const std::pair<std::size_t, std::vector<Value<V>>>* replaced = nullptr);
  Value<V> output(const GraphView& view, const std::vector<Value<V>>& inputs);

  const OpSet& ops() const { return ops_; }

 private:
  struct Key {
    std::size_t inst = 0;
    std::array<const pcg::ParallelShape*, kMaxOpInputs> shapes{};
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  struct ShapeHash {
    std::size_t operator()(const pcg::ParallelShape& s) const;
  };
  struct Entry {
    bool ok = false;
    std::vector<const pcg::ParallelShape*> outputs;
    std::shared_ptr<const spec::Program> program;  // ops only
  };

  const spec::Library& library_;
  const OpSet& ops_;
  std::unordered_map<pcg::ParallelShape, const pcg::ParallelShape*, ShapeHash> interned_;
  std::deque<pcg::ParallelShape> shapes_;
  std::unordered_map<Key, Entry, KeyHash> cache_;
};

// Fixed random values for the inputs, small signed integers; the same seed gives the same values.
std::vector<Value<spec::ModularValue>> modular_inputs(StepEvaluator<spec::ModularDomain>& eval, const std::vector<InputTensor>& inputs,
                                                      std::uint64_t seed);

}  // namespace loom::superopt

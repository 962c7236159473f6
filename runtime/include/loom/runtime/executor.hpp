#pragma once
// Runs a PCG forward and backward on concrete values. Every operator node runs its kernel (native
// when the registry has one for the backend, else the interpreter fallback); parallelization
// operators and fused forms go through a Collectives object. In one process a node's single task
// holds its whole logical value; kernels only ever see the input pieces of one task, so the
// distributed executor runs the same kernels on the pieces of its own tasks.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/collectives.hpp"
#include "loom/runtime/kernel_registry.hpp"

namespace loom::runtime {

template <class T>
class Executor {
 public:
  // `differentiable`: the graph inputs and weights whose gradients backward() returns; nodes
  // that depend on none of them are not differentiated. Throws LoomError naming a node the
  // library cannot run.
  Executor(const spec::Library& library, const pcg::Graph& graph, const KernelRegistry& kernels, Collectives& collectives,
           std::set<std::string> differentiable, Backend backend = Backend::Cpu);

  // `feeds` holds every graph input and weight by name, of its logical shape; the executor reads
  // them in place, so they must stay alive and unchanged until backward() returns.
  void forward(const NamedTensors<T>& feeds);
  const Tensor<T>& value(pcg::PortRef port) const;
  const Tensor<T>& output(std::size_t i) const { return value(graph_.outputs().at(i)); }

  // `output_grads[i]` is the gradient of graph output i. Returns the gradient of every
  // differentiable input and weight.
  NamedTensors<T> backward(const std::vector<Tensor<T>>& output_grads);

  // The first operator (in graph order) whose output holds a NaN or an infinity after forward().
  std::optional<int> first_non_finite() const;
  // Operators running through the interpreter, for reports.
  std::vector<int> interpreted_nodes() const;
  const pcg::Graph& graph() const { return graph_; }

 private:
  struct NodeRun {
    Kernel<T> kernel;
    bool native = false;
    bool parallel = false;
    std::string lowers_to;
    bool differentiated = false;  // depends on a differentiable input
  };
  OpCall<T> call_of(const pcg::Node& node) const;
  ParallelTransfer transfer_of(const pcg::Node& node, bool backward) const;

  const pcg::Graph& graph_;
  Collectives& collectives_;
  std::set<std::string> differentiable_;
  std::vector<NodeRun> runs_;
  std::vector<std::vector<Tensor<T>>> owned_;          // outputs of operators, per node and port
  std::vector<std::vector<const Tensor<T>*>> ports_;  // every port's value: owned or fed
};

}  // namespace loom::runtime

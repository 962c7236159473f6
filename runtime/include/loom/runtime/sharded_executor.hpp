#pragma once
// Runs a plan's PCG task by task, as its machine views place the tasks: a process runs the tasks
// of its rank's device (rank r runs device r; a single process runs every device) and keeps only
// their pieces. Values move between tasks as pcg::piece_moves says, through a Transport; each
// operator task runs its kernel on its own pieces. Graph inputs and weights are given whole to
// every process (each reads the piece it needs), outputs are assembled whole on every process and
// the gradients of inputs and weights summed over all of them, so every process sees the same
// logical values as a single-process run.
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

template <class T>
class ShardedExecutor {
 public:
  // Throws LoomError naming a node the library cannot run, or when a process count above one
  // differs from the plan's device count.
  ShardedExecutor(const spec::Library& library, const pcg::Graph& graph, const KernelRegistry& kernels, Transport& transport,
                  std::set<std::string> differentiable, int devices);

  void forward(const NamedTensors<T>& feeds);
  // Graph output i, whole, on every process.
  Tensor<T> output(std::size_t i);
  // `output_grads[i]`: the gradient of graph output i, whole (the same on every process). Returns
  // the gradient of every differentiable input and weight, whole, on every process.
  NamedTensors<T> backward(const std::vector<Tensor<T>>& output_grads);

  // Operators with a task on this process.
  std::size_t local_operators() const;

 private:
  struct NodeRun {
    Kernel<T> kernel;
    bool parallel = false;
    bool differentiated = false;
    pcg::MachineView view;
    std::vector<pcg::PieceMove> moves;  // a parallel operator's, from its input's layout to its output's
  };
  using Pieces = std::vector<Tensor<T>>;  // per task; empty tensors for tasks of other processes

  bool local(int node, std::int64_t task) const;
  int rank_of(int node, std::int64_t task) const;
  const Tensor<T>& input_piece(int node, std::size_t input, std::int64_t task) const;
  void run_operator(const pcg::Node& n);
  void move_pieces(const pcg::Node& n);
  void operator_backward(const pcg::Node& n, std::vector<std::vector<Pieces>>& grads, NamedTensors<T>& input_grads);
  void move_backward(const pcg::Node& n, std::vector<std::vector<Pieces>>& grads, NamedTensors<T>& input_grads);

  const pcg::Graph& graph_;
  Transport& transport_;
  std::set<std::string> differentiable_;
  int devices_;
  std::vector<NodeRun> runs_;
  const NamedTensors<T>* feeds_ = nullptr;
  std::vector<std::vector<Pieces>> values_;    // per node, port, task
  std::vector<std::vector<Pieces>> received_;  // per node, input, task: pieces read from other processes
};

}  // namespace loom::runtime

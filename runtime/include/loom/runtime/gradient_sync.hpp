#pragma once
// Keeping a distributed run's copies of its inputs and weights equal: the gradient of each box of
// a differentiable graph input is summed among the processes that read that box (as replicas
// synchronise in data parallelism), started during the backward pass as soon as the box's
// gradient is complete so that the sums overlap the rest of the pass; and per-process values
// are made whole on request. Which processes read which box comes from pcg/gradient_sums.hpp,
// the rule the simulator charges.
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "loom/pcg/gradient_sums.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/optimizer.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/transport.hpp"
#include "loom/runtime/value.hpp"

namespace loom::runtime {

template <class T>
class GradientSync {
 public:
  // `reads`: which devices read which boxes of each differentiable graph input, by node id.
  GradientSync(const pcg::Graph& graph, Transport& transport, const std::map<pcg::NodeId, pcg::InputReads>& reads);

  // Starts the sums of the gradients complete once the backward pass is past `node` (their first
  // reader in graph order; -1: those that only graph outputs read, complete before the pass).
  void start_sums_complete_after(pcg::NodeId node, NamedValues<T>& grads);
  bool sums_in_flight() const { return in_flight_; }
  // Waits for the started sums and writes them into the gradients.
  void finish_sums();
  // Sums every gradient now, as start_sums_complete_after over the whole backward pass and
  // finish_sums do.
  void sum_all(NamedValues<T>& grads);
  // Values that each process keeps exact only on the boxes it reads made whole and equal on every
  // process, each box taken from the first process that reads it; a collective every process
  // calls. Names that are not differentiable graph inputs are left as they are. Values a backend
  // holds in device memory are staged through host memory.
  void assemble(NamedValues<T>& values);
  // Per differentiable input, the elements whose gradient the sums make exact on this process.
  const ElementRanges& exact() const { return exact_; }

 private:
  // Which processes add into which box of a differentiable graph input's gradient.
  struct Shares {
    bool overlapping = false;             // boxes overlap: every process sums the whole gradient
    std::vector<pcg::Region> boxes;       // disjoint
    std::vector<std::vector<int>> ranks;  // per box, ascending
  };
  // A sum of gradient boxes among one group of processes: one buffer per group, the boxes in the
  // same order on each process (a collective per box would pay its latency per box). A whole
  // gradient of pcg::kGradientSumInPlaceElements or more is summed where it lies instead, in a
  // collective of its own: packing would copy it in and out.
  struct StartedSum {
    struct Part {
      Tensor<T>* grad;
      pcg::Region box;
    };
    std::vector<T> buffer;
    std::vector<Part> parts;
  };
  void start_sums(const std::vector<std::string>& complete, NamedValues<T>& grads);

  const pcg::Graph& graph_;
  Transport& transport_;
  std::map<std::string, Shares> shares_;  // per differentiable graph input
  std::map<pcg::NodeId, std::vector<std::string>> complete_after_;
  std::deque<StartedSum> started_;  // packed sums; a deque: started buffers never move
  bool in_flight_ = false;          // started, packed or in place, and not yet finished
  ElementRanges exact_;
};

}  // namespace loom::runtime

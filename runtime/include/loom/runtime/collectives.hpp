#pragma once
// How parallelization operators move values between the tasks of a plan. The executor hands each
// parallel operator (and, in the backward pass, its backward pair) to a Collectives object; a
// distributed implementation holds only its own tasks' pieces and lowers the transfer to the
// collective the spec names (`lowers_to`). In one process every value is held whole, so every
// transfer is the identity on values.
#include <string>

#include "loom/pcg/graph.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

struct ParallelTransfer {
  const pcg::Node* node = nullptr;  // the parallel operator or fused form
  std::string lowers_to;            // scatter, gather, broadcast, reduce, allreduce, ...
  pcg::ParallelShape from, to;      // the backward pass moves gradients from `to` back to `from`
  bool backward = false;
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Replaces `value` (this process's pieces of the value in `from`) with its pieces in `to`.
  virtual void transfer(const ParallelTransfer& transfer, Tensor<float>& value) = 0;
  virtual void transfer(const ParallelTransfer& transfer, Tensor<double>& value) = 0;
  // The sum of `local` over every process (losses).
  virtual double sum(double local) = 0;
};

class SingleProcessCollectives final : public Collectives {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void transfer(const ParallelTransfer&, Tensor<float>&) override {}
  void transfer(const ParallelTransfer&, Tensor<double>&) override {}
  double sum(double local) override { return local; }
};

}  // namespace loom::runtime

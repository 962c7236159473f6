#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/pcg/kernel_shape.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::pcg {

using AttrMap = std::map<std::string, std::int64_t>;

// Work one task of an operator does, for the cost model.
struct TaskCost {
  double flops = 0;
  double backward_flops = 0;  // of the gradient with respect to every input
  double bytes_read = 0;
  double bytes_written = 0;
  KernelShape shape = KernelShape::Elementwise;  // of the statement doing the most arithmetic
  // A convolution's windows as one matrix (a row per window, a column per element of it): the
  // elements a kernel that unfolds them before multiplying (im2col) writes and reads again.
  // Zero for any other kernel shape.
  double unfolded_elements = 0;
  // Bit i set: input i is a factor of that product, whose gradient takes another pass over the
  // unfolded windows (unfolding them again for the filters', folding back for the windows').
  std::uint64_t unfolding_inputs = 0;
};

// What the graph layer needs to know about operators. The spec library implements it, so the
// graph never hard-codes an operator.
class OpCatalog {
 public:
  virtual ~OpCatalog() = default;
  virtual bool has_op(const std::string& name) const = 0;
  virtual std::size_t input_count(const std::string& name) const = 0;
  virtual std::size_t output_count(const std::string& name) const = 0;
  // Output parallel shapes for these attributes and input shapes; throws LoomError with the
  // reason when the op cannot accept them (a wrong rank, a degree it cannot take, ...).
  virtual std::vector<ParallelShape> infer(const std::string& name, const AttrMap& attrs,
                                           const std::vector<ParallelShape>& inputs) const = 0;
  virtual TaskCost task_cost(const std::string& name, const AttrMap& attrs, const std::vector<ParallelShape>& inputs) const = 0;
  // Whether the op's one output holds each element of its inputs exactly once and nothing else (a
  // concatenation, a transpose), at these shapes: weights it alone reads may be folded into one
  // (pcg/weight_folding.hpp). A catalog that cannot tell says no.
  virtual bool moves_each_element_once(const std::string& /*name*/, const AttrMap& /*attrs*/,
                                       const std::vector<ParallelShape>& /*inputs*/) const {
    return false;
  }
};

}  // namespace loom::pcg

#pragma once
// The fallback for an operator without a native kernel: forward through the spec interpreter,
// backward with the gradient derived from its comprehension (spec::evaluate_gradient), both in
// double precision whatever the element type.
#include <memory>

#include "loom/interpreter/library.hpp"
#include "loom/runtime/kernel.hpp"

namespace loom::runtime {

// A kernel for `op` with `attrs` on input pieces of the given shapes (compiled once), pieces of
// logical values of `logical_input_dims` (empty: taken from each call's `logical_dims`). When the
// op's body reads a dimension's size or an index's value, a call on split pieces computes its
// output pieces (`output_regions`) of the logical op from the inputs at their logical positions
// (`regions`); a summed index split in the pieces gives partial sums. Throws LoomError when the
// library rejects the instance.
template <class T>
Kernel<T> interpreter_kernel(const spec::Library& library, const std::string& op, const pcg::AttrMap& attrs,
                             const std::vector<std::vector<std::int64_t>>& input_dims,
                             const std::vector<std::vector<std::int64_t>>& logical_input_dims = {});

}  // namespace loom::runtime

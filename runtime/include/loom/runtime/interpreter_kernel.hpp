#pragma once
// The kernel of an operator without a hand-written one, from its spec: the comprehension and its
// derived gradient compiled to machine code (spec::build_native) in the element type, or, where no
// compiler is found, a build fails or `compile` is false, run by the interpreter
// (spec::evaluate, spec::evaluate_gradient) in double precision.
#include <memory>

#include "loom/interpreter/library.hpp"
#include "loom/runtime/kernel.hpp"

namespace loom::runtime {

// A kernel for `op` with `attrs` on input pieces of the given shapes (compiled once), pieces of
// logical values of `logical_input_dims` (empty: taken from each call's `logical_dims`). When the
// op's body reads a dimension's size or an index's value, a call on split pieces computes its
// output pieces (`output_regions`) of the logical op from the inputs at their logical positions
// (`regions`); a summed index split in the pieces gives partial sums. Throws LoomError when the
// library rejects the instance. The kernel's `route` says whether it runs compiled.
template <class T>
Kernel<T> interpreter_kernel(const spec::Library& library, const std::string& op, const pcg::AttrMap& attrs,
                             const std::vector<std::vector<std::int64_t>>& input_dims,
                             const std::vector<std::vector<std::int64_t>>& logical_input_dims = {}, bool compile = true);

}  // namespace loom::runtime

#pragma once
// Adding runs of one device array into another (a box of one piece into another), queued on the
// context's stream.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

// into[r.into + k] += from[r.from + k] for k < r.length, for each of `count` runs r, given in device
// memory as three integers each (from, into, length); no two runs overlap in `into`.
template <class T>
void add_runs(const CudaContext& ctx, const std::int64_t* runs, std::int64_t count, const T* from, T* into);

}  // namespace loom::runtime::cuda

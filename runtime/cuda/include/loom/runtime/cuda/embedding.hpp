#pragma once
// Table lookups on device pointers (embedding, embedding_bag, gather_rows), in float and double.
// The table may be a piece of a larger table: its rows are the logical rows [first_row,
// first_row + rows). An id selects logical row id when it is an integer naming a row of the
// piece; any other id selects nothing (reads zeros, takes no gradient).
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

struct LookupShape {
  std::int64_t bags, per_bag;  // ids [bags, per_bag]
  std::int64_t rows, width;    // table [rows, width]
  std::int64_t first_row = 0;  // the logical number of the table's first row
};

// out[b] = the sum, over the ids of bag b in order, of the table rows they select (zeros when none).
template <class T>
void lookup_forward(const CudaContext& ctx, const LookupShape& shape, const T* ids, const T* table, T* out);

// dtable = the scatter-add of dout[b] into every row bag b's ids select (all of dtable written).
template <class T>
void lookup_backward(const CudaContext& ctx, const LookupShape& shape, const T* ids, const T* dout, T* dtable);

}  // namespace loom::runtime::cuda

#pragma once
// Data movement on device pointers: one strided copy of a box of up to six dimensions, which
// serves block copies (concat, split, slice_axis) and axis swaps (swap_axes, transpose), and a
// zero fill; in float and double.
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

constexpr std::size_t kMaxCopyRank = 6;

// Element (i_0, .., i_{rank-1}) of the box, i_d < extents[d], is read at sum i_d src_strides[d]
// from the source pointer and written at sum i_d dst_strides[d] from the destination pointer.
struct StridedCopy {
  std::size_t rank = 0;
  // Plain arrays: the struct is a kernel argument.
  std::int64_t extents[kMaxCopyRank]{}, src_strides[kMaxCopyRank]{}, dst_strides[kMaxCopyRank]{};

  std::int64_t elements() const;
};

// The copy of the box `extents`, read with `src_strides` and written with `dst_strides` (one of
// each per dimension, at most kMaxCopyRank).
StridedCopy strided_box(std::initializer_list<std::int64_t> extents, std::initializer_list<std::int64_t> src_strides,
                        std::initializer_list<std::int64_t> dst_strides);

// `rows` rows of `width` elements, rows `src_pitch` apart in the source and `dst_pitch` apart in
// the destination.
StridedCopy block_copy(std::int64_t rows, std::int64_t width, std::int64_t src_pitch, std::int64_t dst_pitch);

// A dense [outer, m, n, inner] tensor written densely as [outer, n, m, inner].
StridedCopy swap_adjacent_axes(std::int64_t outer, std::int64_t m, std::int64_t n, std::int64_t inner);

template <class T>
void strided_copy(const CudaContext& ctx, const StridedCopy& copy, const T* src, T* dst);

// dst[0, n) = 0.
template <class T>
void zero_fill(const CudaContext& ctx, std::int64_t n, T* dst);

}  // namespace loom::runtime::cuda

#pragma once
// Copying boxes of the logical tensor out of and into the pieces tasks hold.
#include <vector>

#include "loom/pcg/piece_moves.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

// Calls `visit(offset in the piece, offset in a row-major buffer of the box)` for every element
// of `box`, which lies inside `piece` (the region the piece covers).
template <class Visit>
void for_each_in_box(const pcg::Region& piece, const pcg::Region& box, Visit&& visit) {
  const std::size_t rank = box.lo.size();
  if (box.empty()) return;
  std::vector<std::int64_t> at = box.lo;
  std::int64_t flat = 0;
  while (true) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset = offset * (piece.hi[d] - piece.lo[d]) + (at[d] - piece.lo[d]);
    visit(static_cast<std::size_t>(offset), static_cast<std::size_t>(flat++));
    std::size_t d = rank;
    while (d > 0) {
      --d;
      if (++at[d] < box.hi[d]) break;
      at[d] = box.lo[d];
      if (d == 0) return;
    }
    if (rank == 0) return;
  }
}

template <class T>
std::vector<T> read_box(const Tensor<T>& value, const pcg::Region& piece, const pcg::Region& box) {
  std::vector<T> out(static_cast<std::size_t>(box.elements()));
  for_each_in_box(piece, box, [&](std::size_t at, std::size_t i) { out[i] = value.data[at]; });
  return out;
}

template <class T>
void add_box(Tensor<T>& value, const pcg::Region& piece, const pcg::Region& box, const std::vector<T>& data) {
  for_each_in_box(piece, box, [&](std::size_t at, std::size_t i) { value.data[at] += data[i]; });
}

}  // namespace loom::runtime

#pragma once
// Copying boxes of the logical tensor out of and into the pieces tasks hold.
#include <vector>

#include "loom/pcg/piece_moves.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

// Calls `visit(offset in the piece, offset in a row-major buffer of the box, length)` for every
// contiguous run of `box`, which lies inside `piece` (the region the piece covers). Trailing
// dimensions the box spans whole join one run, so a box of whole rows is a single call.
template <class Visit>
void for_each_run_in_box(const pcg::Region& piece, const pcg::Region& box, Visit&& visit) {
  if (box.empty()) return;
  const std::size_t rank = box.lo.size();
  // Dimensions [inner, rank) form each run.
  std::size_t inner = rank;
  std::int64_t run = 1;
  while (inner > 0) {
    const std::size_t d = inner - 1;
    run *= box.hi[d] - box.lo[d];
    inner = d;
    if (box.lo[d] != piece.lo[d] || box.hi[d] != piece.hi[d]) break;
  }
  std::vector<std::int64_t> stride(rank, 1);  // of the piece
  for (std::size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * (piece.hi[d] - piece.lo[d]);
  std::vector<std::int64_t> at(box.lo.begin(), box.lo.begin() + static_cast<std::ptrdiff_t>(inner));
  std::int64_t flat = 0;
  while (true) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += ((d < inner ? at[d] : box.lo[d]) - piece.lo[d]) * stride[d];
    visit(static_cast<std::size_t>(offset), static_cast<std::size_t>(flat), static_cast<std::size_t>(run));
    flat += run;
    std::size_t d = inner;
    while (d > 0) {
      --d;
      if (++at[d] < box.hi[d]) break;
      at[d] = box.lo[d];
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

// Appends the box's elements to `out` in row-major order. Runs come in that order, so nothing is
// zeroed first.
template <class T>
void append_box(const Tensor<T>& value, const pcg::Region& piece, const pcg::Region& box, std::vector<T>& out) {
  for_each_run_in_box(piece, box, [&](std::size_t at, std::size_t, std::size_t n) {
    out.insert(out.end(), value.data.begin() + static_cast<std::ptrdiff_t>(at), value.data.begin() + static_cast<std::ptrdiff_t>(at + n));
  });
}

// The box's elements in row-major order.
template <class T>
std::vector<T> read_box(const Tensor<T>& value, const pcg::Region& piece, const pcg::Region& box) {
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(box.elements()));
  append_box(value, piece, box, out);
  return out;
}

template <class T>
void add_box(Tensor<T>& value, const pcg::Region& piece, const pcg::Region& box, const std::vector<T>& data) {
  for_each_run_in_box(piece, box, [&](std::size_t at, std::size_t i, std::size_t n) {
    T* into = value.data.data() + at;
    const T* from = data.data() + i;
    for (std::size_t k = 0; k < n; ++k) into[k] += from[k];
  });
}

// Adds a box's values into a piece; a piece not yet filled that the box covers whole takes the
// buffer as it is, one not covered whole starts from zeros.
template <class T>
void place_box(Tensor<T>& value, const std::vector<std::int64_t>& dims, const pcg::Region& piece, const pcg::Region& box,
               std::vector<T>&& data) {
  if (value.data.empty() && box == piece) {
    value.dims = dims;
    value.data = std::move(data);
    return;
  }
  if (value.data.empty()) value = Tensor<T>(dims, T(0));
  add_box(value, piece, box, data);
}

template <class T>
void write_box(Tensor<T>& value, const pcg::Region& piece, const pcg::Region& box, const T* data) {
  for_each_run_in_box(piece, box,
                      [&](std::size_t at, std::size_t i, std::size_t n) { std::copy(data + i, data + i + n, value.data.data() + at); });
}

}  // namespace loom::runtime

#pragma once
// Copying boxes of the logical tensor out of and into the pieces tasks hold.
#include <algorithm>
#include <vector>

#include "loom/pcg/piece_moves.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/value.hpp"

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

// The runs that carry `box` from a piece covering `from_piece` into one covering `into_piece`.
inline std::vector<ElementRun> box_runs(const pcg::Region& from_piece, const pcg::Region& into_piece, const pcg::Region& box) {
  struct Run {
    std::size_t at, flat, length;
  };
  const auto runs_in = [&box](const pcg::Region& piece) {
    std::vector<Run> runs;
    for_each_run_in_box(piece, box, [&](std::size_t at, std::size_t flat, std::size_t n) { runs.push_back({at, flat, n}); });
    return runs;
  };
  const std::vector<Run> from = runs_in(from_piece), into = runs_in(into_piece);
  // Both sides list the box's elements in row-major order, cut at different places.
  std::vector<ElementRun> out;
  std::size_t i = 0, j = 0, flat = 0;
  while (i < from.size() && j < into.size()) {
    const std::size_t end = std::min(from[i].flat + from[i].length, into[j].flat + into[j].length);
    out.push_back({from[i].at + (flat - from[i].flat), into[j].at + (flat - into[j].flat), end - flat});
    flat = end;
    if (flat == from[i].flat + from[i].length) ++i;
    if (flat == into[j].flat + into[j].length) ++j;
  }
  return out;
}

// Adds box `box` of `from` (covering `from_piece`) into `into` (covering `into_piece`; zeros of
// `into_dims` first when empty), in `from`'s device memory when it lies there.
template <class T>
void add_box_of(const Value<T>& from, const pcg::Region& from_piece, Value<T>& into, const std::vector<std::int64_t>& into_dims,
                const pcg::Region& into_piece, const pcg::Region& box) {
  if (const DeviceArray<T>* there = from.device()) {
    const DeviceMemory<T>& memory = there->memory();
    if (into.empty() && box == from_piece && box == into_piece) {
      into = Value<T>(into_dims, memory.copy(*there));
      return;
    }
    if (into.empty()) into = Value<T>(into_dims, memory.zeros(Tensor<T>::element_count(into_dims)));
    memory.add_runs(*there, into.on_mut(memory), box_runs(from_piece, into_piece, box));
    return;
  }
  place_box(into.host_mut(), into_dims, into_piece, box, read_box(from.host(), from_piece, box));
}

template <class T>
void write_box(Tensor<T>& value, const pcg::Region& piece, const pcg::Region& box, const T* data) {
  for_each_run_in_box(piece, box,
                      [&](std::size_t at, std::size_t i, std::size_t n) { std::copy(data + i, data + i + n, value.data.data() + at); });
}

}  // namespace loom::runtime

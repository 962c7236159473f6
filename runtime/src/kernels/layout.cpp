// Layout operators. Reshapes that keep the row-major order (reshape, flatten, merging or splitting
// an axis, squeezing) only relabel the dimensions; concat, split, slice_axis and swap_axes move
// blocks.
#include <algorithm>

#include "eigen_views.hpp"
#include "kernels.hpp"
#include "loom/runtime/piece_checks.hpp"
#include "loom/runtime/relabel_kernel.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;
using Dims = std::vector<std::int64_t>;

std::size_t axis_of(const pcg::AttrMap& attrs) { return static_cast<std::size_t>(attrs.at("axis")); }

// Copies rows of `width` elements: dst row (outer, dst_col..) from src row (outer, src_col..).
template <class T>
void copy_blocks(const Tensor<T>& src, std::int64_t src_width, std::int64_t src_col, Tensor<T>& dst, std::int64_t dst_width,
                 std::int64_t dst_col, std::int64_t outer, std::int64_t width) {
  matrix(dst, outer, dst_width).middleCols(as_index(dst_col), as_index(width)) =
      matrix(src, outer, src_width).middleCols(as_index(src_col), as_index(width));
}

// concat / split along `axis`: the tensor seen as [outer, axis * inner] matrices.
template <class T>
Kernel<T> concat_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const auto& x = c.input(0);
    const auto& y = c.input(1);
    const std::size_t axis = axis_of(c.attrs);
    const std::int64_t outer = product(x.dims, 0, axis), inner = product(x.dims, axis + 1, x.rank());
    const std::int64_t wx = x.dims[axis] * inner, wy = y.dims[axis] * inner;
    Dims dims = x.dims;
    dims[axis] += y.dims[axis];
    Tensor<T> out(dims);
    copy_blocks(x, wx, 0, out, wx + wy, 0, outer, wx);
    copy_blocks(y, wy, 0, out, wx + wy, wx, outer, wy);
    return Tensors<T>{std::move(out)};
  };
  k.backward = [](const GradCall<T>& g) {
    const auto& x = g.input(0);
    const auto& y = g.input(1);
    const std::size_t axis = axis_of(g.call.attrs);
    const std::int64_t outer = product(x.dims, 0, axis), inner = product(x.dims, axis + 1, x.rank());
    const std::int64_t wx = x.dims[axis] * inner, wy = y.dims[axis] * inner;
    Tensors<T> grads{Tensor<T>(x.dims), Tensor<T>(y.dims)};
    copy_blocks(g.grad(0), wx + wy, 0, grads[0], wx, 0, outer, wx);
    copy_blocks(g.grad(0), wx + wy, wx, grads[1], wy, 0, outer, wy);
    return grads;
  };
  return k;
}

template <class T>
Kernel<T> split_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const auto& x = c.input(0);
    const std::size_t axis = axis_of(c.attrs);
    const std::int64_t at = c.attr("at");
    const std::int64_t outer = product(x.dims, 0, axis), inner = product(x.dims, axis + 1, x.rank());
    const std::int64_t width = x.dims[axis] * inner, w0 = at * inner;
    Dims first = x.dims, second = x.dims;
    first[axis] = at;
    second[axis] -= at;
    Tensors<T> out{Tensor<T>(first), Tensor<T>(second)};
    copy_blocks(x, width, 0, out[0], w0, 0, outer, w0);
    copy_blocks(x, width, w0, out[1], width - w0, 0, outer, width - w0);
    return out;
  };
  k.backward = [](const GradCall<T>& g) {
    const auto& x = g.input(0);
    const std::size_t axis = axis_of(g.call.attrs);
    const std::int64_t at = g.call.attr("at");
    const std::int64_t outer = product(x.dims, 0, axis), inner = product(x.dims, axis + 1, x.rank());
    const std::int64_t width = x.dims[axis] * inner, w0 = at * inner;
    Tensors<T> grads{Tensor<T>(x.dims)};
    copy_blocks(g.grad(0), w0, 0, grads[0], width, 0, outer, w0);
    copy_blocks(g.grad(1), width - w0, 0, grads[0], width, w0, outer, width - w0);
    return grads;
  };
  return k;
}

// Entries start .. start + size - 1 of dimension `axis`: x as [outer, n * inner] rows, a band of
// columns kept. `start` counts from the logical dimension's origin, so that dimension stays whole.
template <class T>
Kernel<T> slice_axis_kernel() {
  struct Band {
    std::int64_t outer, width, from, size;  // rows, row width, first column and width of the band
  };
  auto band = [](const OpCall<T>& c) {
    const auto& x = c.input(0);
    const std::size_t axis = axis_of(c.attrs);
    require_whole(c, 0, axis, "the slice's start counts from the dimension's logical origin");
    const std::int64_t inner = product(x.dims, axis + 1, x.rank());
    return Band{product(x.dims, 0, axis), x.dims[axis] * inner, c.attr("start") * inner, c.attr("size") * inner};
  };
  Kernel<T> k;
  k.forward = [band](const OpCall<T>& c) {
    const Band b = band(c);
    Dims dims = c.input(0).dims;
    dims[axis_of(c.attrs)] = c.attr("size");
    Tensor<T> out(dims);
    copy_blocks(c.input(0), b.width, b.from, out, b.size, 0, b.outer, b.size);
    return Tensors<T>{std::move(out)};
  };
  k.backward = [band](const GradCall<T>& g) {
    const Band b = band(g.call);
    Tensors<T> grads{zeros_like(g.input(0))};
    copy_blocks(g.grad(0), b.size, 0, grads[0], b.width, b.from, b.outer, b.size);
    return grads;
  };
  return k;
}

// Swaps dimensions axis and axis + 1: [outer, m, n, inner] -> [outer, n, m, inner].
template <class T>
Tensor<T> swap_axes(const Tensor<T>& x, std::size_t axis) {
  const std::int64_t outer = product(x.dims, 0, axis), m = x.dims[axis], n = x.dims[axis + 1];
  const std::int64_t inner = product(x.dims, axis + 2, x.rank());
  Dims dims = x.dims;
  std::swap(dims[axis], dims[axis + 1]);
  Tensor<T> out(dims);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t a = 0; a < m; ++a)
      for (std::int64_t b = 0; b < n; ++b)
        matrix(out, 1, inner, ((o * n + b) * m + a) * inner) = matrix(x, 1, inner, ((o * m + a) * n + b) * inner);
  return out;
}

template <class T>
Kernel<T> swap_axes_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) { return Tensors<T>{swap_axes(c.input(0), axis_of(c.attrs))}; };
  k.backward = [](const GradCall<T>& g) { return Tensors<T>{swap_axes(g.grad(0), axis_of(g.call.attrs))}; };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::Relabel, relabel_kernel<T>());
  k.provide<T>(NativeKernel::Concat, concat_kernel<T>());
  k.provide<T>(NativeKernel::Split, split_kernel<T>());
  k.provide<T>(NativeKernel::SliceAxis, slice_axis_kernel<T>());
  k.provide<T>(NativeKernel::SwapAxes, swap_axes_kernel<T>());
}

}  // namespace

void add_layout_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

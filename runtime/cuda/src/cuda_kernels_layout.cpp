// Layout operators on the device, every one a strided copy: concat, split and slice_axis copy
// blocks of rows, swap_axes and transpose swap two adjacent axes.
#include <tuple>

#include "kernel_adapter.hpp"
#include "loom/runtime/cuda/layout.hpp"
#include "loom/runtime/piece_checks.hpp"

namespace loom::runtime::cuda_adapter {
namespace {

using Dims = std::vector<std::int64_t>;

// The tensor seen as [outer, dims[axis] * inner] rows around `axis`.
struct Rows {
  std::int64_t outer, inner;
};
Rows rows_around(const Dims& dims, std::size_t axis) { return {product(dims, 0, axis), product(dims, axis + 1, dims.size())}; }

template <class T>
Kernel<T> concat_kernel() {
  auto widths = [](const ValueCall<T>& c, std::size_t axis) {
    const Dims& x = c.input(0).dims();
    const Dims& y = c.input(1).dims();
    Dims rest_x = x, rest_y = y;
    if (y.size() == x.size()) rest_x[axis] = rest_y[axis] = 0;
    if (rest_x != rest_y) throw LoomError(c.op + ": the inputs differ in a dimension other than the axis " + std::to_string(axis));
    const Rows r = rows_around(x, axis);
    return std::tuple{r.outer, x[axis] * r.inner, y[axis] * r.inner};
  };
  Kernel<T> k;
  k.forward_values = [widths](const ValueCall<T>& c) {
    const std::size_t axis = axis_of(c);
    const auto [outer, wx, wy] = widths(c, axis);
    auto out = scratch<T>(static_cast<std::size_t>(outer * (wx + wy)));
    cuda::strided_copy(context(), cuda::block_copy(outer, wx, wx, wx + wy), in(c.input(0)), out.data());
    cuda::strided_copy(context(), cuda::block_copy(outer, wy, wy, wx + wy), in(c.input(1)), out.data() + wx);
    Dims dims = c.input(0).dims();
    dims[axis] += c.input(1).dims()[axis];
    return Values<T>{hold(std::move(out), dims)};
  };
  k.backward_values = [widths](const ValueGradCall<T>& g) {
    const std::size_t axis = axis_of(g.call);
    const auto [outer, wx, wy] = widths(g.call, axis);
    const auto& dout = device_buffer(g.grad(0));
    Values<T> grads(2);
    if (g.wants(0)) {
      auto dx = scratch<T>(g.input(0).size());
      cuda::strided_copy(context(), cuda::block_copy(outer, wx, wx + wy, wx), dout.data(), dx.data());
      grads[0] = hold(std::move(dx), g.input(0).dims());
    }
    if (g.wants(1)) {
      auto dy = scratch<T>(g.input(1).size());
      cuda::strided_copy(context(), cuda::block_copy(outer, wy, wx + wy, wy), dout.data() + wx, dy.data());
      grads[1] = hold(std::move(dy), g.input(1).dims());
    }
    return grads;
  };
  return k;
}

template <class T>
Kernel<T> split_kernel() {
  // The rows around the axis, the width of a row and the width of the first part's row.
  auto widths = [](const ValueCall<T>& c, std::size_t axis) {
    const Dims& x = c.input(0).dims();
    const std::int64_t at = c.attr("at");
    if (at < 0 || at > x[axis])
      throw LoomError(c.op + ": at = " + std::to_string(at) + " is outside axis " + std::to_string(axis) + " of size " +
                      std::to_string(x[axis]));
    const Rows r = rows_around(x, axis);
    return std::tuple{r.outer, x[axis] * r.inner, at * r.inner};
  };
  Kernel<T> k;
  k.forward_values = [widths](const ValueCall<T>& c) {
    const std::size_t axis = axis_of(c);
    const auto [outer, width, w0] = widths(c, axis);
    const auto& x = device_buffer(c.input(0));
    auto first = scratch<T>(static_cast<std::size_t>(outer * w0));
    auto second = scratch<T>(static_cast<std::size_t>(outer * (width - w0)));
    cuda::strided_copy(context(), cuda::block_copy(outer, w0, width, w0), x.data(), first.data());
    cuda::strided_copy(context(), cuda::block_copy(outer, width - w0, width, width - w0), x.data() + w0, second.data());
    Dims first_dims = c.input(0).dims(), second_dims = c.input(0).dims();
    first_dims[axis] = c.attr("at");
    second_dims[axis] -= first_dims[axis];
    return Values<T>{hold(std::move(first), first_dims), hold(std::move(second), second_dims)};
  };
  k.backward_values = [widths](const ValueGradCall<T>& g) {
    const std::size_t axis = axis_of(g.call);
    const auto [outer, width, w0] = widths(g.call, axis);
    auto dx = scratch<T>(g.input(0).size());
    cuda::strided_copy(context(), cuda::block_copy(outer, w0, w0, width), in(g.grad(0)), dx.data());
    cuda::strided_copy(context(), cuda::block_copy(outer, width - w0, width - w0, width), in(g.grad(1)), dx.data() + w0);
    return Values<T>{hold(std::move(dx), g.input(0).dims())};
  };
  return k;
}

// Entries start .. start + size - 1 of `axis`: rows of size * inner elements cut from rows of
// n * inner; the backward writes dy into that window of zeros. The body reads x at `j + start`, so
// no derived parallel form splits the axis; a piece of it anyway is refused rather than sliced at
// the wrong place.
template <class T>
Kernel<T> slice_axis_kernel() {
  struct Window {
    std::int64_t outer, n, start, size, inner;
  };
  auto window_of = [](const ValueCall<T>& c) {
    const std::size_t axis = axis_of(c);
    const Dims& x = c.input(0).dims();
    require_whole(c, 0, axis, "the body reads its entry j + start");
    const std::int64_t start = c.attr("start"), size = c.attr("size");
    if (start < 0 || size <= 0 || start + size > x[axis])
      throw LoomError(c.op + ": start = " + std::to_string(start) + " and size = " + std::to_string(size) + " do not fit axis " +
                      std::to_string(axis) + " of size " + std::to_string(x[axis]));
    const Rows r = rows_around(x, axis);
    return Window{r.outer, x[axis], start, size, r.inner};
  };
  Kernel<T> k;
  k.forward_values = [window_of](const ValueCall<T>& c) {
    const Window w = window_of(c);
    auto out = scratch<T>(static_cast<std::size_t>(w.outer * w.size * w.inner));
    cuda::strided_copy(context(), cuda::block_copy(w.outer, w.size * w.inner, w.n * w.inner, w.size * w.inner),
                       in(c.input(0)) + w.start * w.inner, out.data());
    Dims dims = c.input(0).dims();
    dims[axis_of(c)] = w.size;
    return Values<T>{hold(std::move(out), dims)};
  };
  k.backward_values = [window_of](const ValueGradCall<T>& g) {
    const Window w = window_of(g.call);
    auto dx = scratch<T>(g.input(0).size());
    cuda::zero_fill(context(), count(g.input(0)), dx.data());
    cuda::strided_copy(context(), cuda::block_copy(w.outer, w.size * w.inner, w.size * w.inner, w.n * w.inner), in(g.grad(0)),
                       dx.data() + w.start * w.inner);
    return Values<T>{hold(std::move(dx), g.input(0).dims())};
  };
  return k;
}

// x with dimensions axis and axis + 1 swapped.
template <class T>
Value<T> swapped(const Value<T>& x, std::size_t axis) {
  const Dims& d = x.dims();
  auto out = scratch<T>(x.size());
  cuda::strided_copy(context(), cuda::swap_adjacent_axes(product(d, 0, axis), d[axis], d[axis + 1], product(d, axis + 2, d.size())), in(x),
                     out.data());
  Dims dims = d;
  std::swap(dims[axis], dims[axis + 1]);
  return hold(std::move(out), dims);
}

template <class T>
Kernel<T> swap_axes_kernel() {
  Kernel<T> k;
  k.forward_values = [](const ValueCall<T>& c) { return Values<T>{swapped(c.input(0), axis_of(c, 1))}; };
  k.backward_values = [](const ValueGradCall<T>& g) { return Values<T>{swapped(g.grad(0), axis_of(g.call, 1))}; };
  return k;
}

// Swaps the last two dimensions.
template <class T>
Kernel<T> transpose_kernel() {
  Kernel<T> k;
  k.forward_values = [](const ValueCall<T>& c) {
    require_min_rank(c, 0, 2);
    return Values<T>{swapped(c.input(0), c.input(0).rank() - 2)};
  };
  k.backward_values = [](const ValueGradCall<T>& g) {
    require_min_rank(g.call, 0, 2);
    return Values<T>{swapped(g.grad(0), g.input(0).rank() - 2)};
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::Concat, concat_kernel<T>());
  k.provide<T>(NativeKernel::Split, split_kernel<T>());
  k.provide<T>(NativeKernel::SliceAxis, slice_axis_kernel<T>());
  k.provide<T>(NativeKernel::SwapAxes, swap_axes_kernel<T>());
  k.provide<T>(NativeKernel::Transpose, transpose_kernel<T>());
}

}  // namespace

void add_layout_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::cuda_adapter

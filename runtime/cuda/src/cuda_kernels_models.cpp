// The model zoo's operators on the device: NMT's dot attention, Swin-Transformer's windows, shift
// and mask, and AlphaFold2's pair bias, outer product mean and triangle updates. A piece of a split
// value is computed where the body allows it (the window mask reads logical rows, the outer product
// mean divides by the logical sequence count) and refused with a LoomError where it does not (a
// roll or a window across a split dimension).
#include <algorithm>
#include <initializer_list>
#include <string>

#include "kernel_adapter.hpp"
#include "loom/runtime/cuda/dot_attention.hpp"
#include "loom/runtime/cuda/pair.hpp"
#include "loom/runtime/cuda/windows.hpp"
#include "loom/runtime/piece_checks.hpp"

namespace loom::runtime::cuda_adapter {
namespace {

using Dims = std::vector<std::int64_t>;

// dot_attention(q [b, n], mem [b, t, n]) -> [b, n].
template <class T>
Kernel<T> dot_attention_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_rank(c, 0, 2);
    require_rank(c, 1, 3);
    const Dims& q = c.input(0).dims();
    const Dims& mem = c.input(1).dims();
    if (mem[0] != q[0] || mem[2] != q[1])
      throw LoomError(c.op + ": the memory [" + std::to_string(mem[0]) + ", " + std::to_string(mem[1]) + ", " + std::to_string(mem[2]) +
                      "] does not fit queries [" + std::to_string(q[0]) + ", " + std::to_string(q[1]) + "]");
    require_whole(c, 0, 1, "each score sums over the whole state");
    require_whole(c, 1, 2, "each score sums over the whole state");
    require_whole(c, 1, 1, "the softmax normalizes over the whole memory");
    return cuda::DotAttentionShape{q[0], mem[1], q[1]};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::DotAttentionShape s = shape_of(c);
    auto out = scratch<T>(c.input(0).size());
    cuda::dot_attention_forward<T>(context(), s, in(c.input(0)), in(c.input(1)), out.data());
    return Values<T>{hold(std::move(out), c.input(0).dims())};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const cuda::DotAttentionShape s = shape_of(g.call);
    auto dq = gradient_buffer(g, 0), dmem = gradient_buffer(g, 1);
    cuda::dot_attention_backward<T>(context(), s, in(g.input(0)), in(g.input(1)), in(g.grad(0)), dq.data(), dmem.data());
    return Values<T>{gradient_of(g, 0, std::move(dq)), gradient_of(g, 1, std::move(dmem))};
  };
  return k;
}

// The window size `ws`, checked against an image of height x width tokens.
template <class T>
std::int64_t window_of(const ValueCall<T>& c, std::int64_t height, std::int64_t width) {
  const std::int64_t ws = c.attr("ws");
  if (ws <= 0 || height % ws != 0 || width % ws != 0)
    throw LoomError(c.op + ": windows of " + std::to_string(ws) + " do not tile an image of " + std::to_string(height) + " x " +
                    std::to_string(width));
  return ws;
}

template <class T>
Value<T> copied(const cuda::StridedCopy& copy, const Value<T>& x, Dims dims) {
  auto out = scratch<T>(x.size());
  cuda::strided_copy(context(), copy, in(x), out.data());
  return hold(std::move(out), std::move(dims));
}

// window_partition<ws>(x [b, h, w, c]) -> [b * (h / ws) * (w / ws), ws * ws, c].
template <class T>
Kernel<T> window_partition_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_rank(c, 0, 4);
    require_whole(c, 0, 1, "a window of ws rows must lie in one piece");
    require_whole(c, 0, 2, "a window of ws columns must lie in one piece");
    const Dims& x = c.input(0).dims();
    return cuda::WindowShape{x[0], x[1], x[2], x[3], window_of(c, x[1], x[2])};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::WindowShape s = shape_of(c);
    const Dims dims{s.batch * (s.height / s.window) * (s.width / s.window), s.window * s.window, s.channels};
    return Values<T>{copied(cuda::image_to_windows(s), c.input(0), dims)};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    return Values<T>{copied(cuda::windows_to_image(shape_of(g.call)), g.grad(0), g.input(0).dims())};
  };
  return k;
}

// window_reverse<ws, height, width>(x [m, ws * ws, c]) -> [m / windows, height, width, c] with
// windows = (height / ws) (width / ws) per image.
template <class T>
Kernel<T> window_reverse_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_rank(c, 0, 3);
    require_whole(c, 0, 1, "the tokens of a window must lie in one piece");
    const Dims& x = c.input(0).dims();
    const std::int64_t height = c.attr("height"), width = c.attr("width"), ws = window_of(c, height, width);
    const std::int64_t per_image = (height / ws) * (width / ws);
    if (x[1] != ws * ws)
      throw LoomError(c.op + ": windows of " + std::to_string(x[1]) + " tokens are not " + std::to_string(ws) + " x " + std::to_string(ws));
    if (x[0] % per_image != 0 || c.offset(0, 0) % per_image != 0)
      throw LoomError(c.op + ": windows " + std::to_string(c.offset(0, 0)) + " .. " + std::to_string(c.offset(0, 0) + x[0] - 1) +
                      " are not whole images of " + std::to_string(per_image) + " windows");
    return cuda::WindowShape{x[0] / per_image, height, width, x[2], ws};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::WindowShape s = shape_of(c);
    return Values<T>{copied(cuda::windows_to_image(s), c.input(0), {s.batch, s.height, s.width, s.channels})};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    return Values<T>{copied(cuda::image_to_windows(shape_of(g.call)), g.grad(0), g.input(0).dims())};
  };
  return k;
}

// cyclic_shift<sh, sw>(x [b, h, w, c]): the backward shifts back by (h - sh, w - sw).
template <class T>
Kernel<T> cyclic_shift_kernel() {
  struct Shift {
    cuda::ImageShape image;
    std::int64_t h, w;
  };
  auto shift_of = [](const ValueCall<T>& c) {
    require_rank(c, 0, 4);
    require_whole(c, 0, 1, "the shift wraps rows around");
    require_whole(c, 0, 2, "the shift wraps columns around");
    const Dims& x = c.input(0).dims();
    const std::int64_t sh = c.attr("sh"), sw = c.attr("sw");
    if (sh < 0 || sw < 0 || sh >= x[1] || sw >= x[2])
      throw LoomError(c.op + ": shifts (" + std::to_string(sh) + ", " + std::to_string(sw) + ") outside an image of " +
                      std::to_string(x[1]) + " x " + std::to_string(x[2]));
    return Shift{{x[0], x[1], x[2], x[3]}, sh, sw};
  };
  auto shifted = [](const Shift& s, std::int64_t h, std::int64_t w, const Value<T>& x) {
    auto out = scratch<T>(x.size());
    cuda::cyclic_shift<T>(context(), s.image, h, w, in(x), out.data());
    return hold(std::move(out), x.dims());
  };
  Kernel<T> k;
  k.forward_values = [=](const ValueCall<T>& c) {
    const Shift s = shift_of(c);
    return Values<T>{shifted(s, s.h, s.w, c.input(0))};
  };
  k.backward_values = [=](const ValueGradCall<T>& g) {
    const Shift s = shift_of(g.call);
    return Values<T>{shifted(s, (s.image.height - s.h) % s.image.height, (s.image.width - s.w) % s.image.width, g.grad(0))};
  };
  return k;
}

// add_window_mask(x [m, h, t, u], mask [w, t, u]): logical row i of x takes mask[i % w].
template <class T>
Kernel<T> add_window_mask_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_rank(c, 0, 4);
    require_rank(c, 1, 3);
    require_whole(c, 1, 0, "every row of the scores needs the mask of its window");
    const Dims& x = c.input(0).dims();
    const Dims& mask = c.input(1).dims();
    if (mask[1] != x[2] || mask[2] != x[3] || mask[0] <= 0 || c.logical_size(0, 0) % mask[0] != 0)
      throw LoomError(c.op + ": the mask [" + std::to_string(mask[0]) + ", " + std::to_string(mask[1]) + ", " + std::to_string(mask[2]) +
                      "] does not fit scores of " + std::to_string(c.logical_size(0, 0)) + " rows of " + std::to_string(x[2]) + " x " +
                      std::to_string(x[3]));
    return cuda::WindowMaskShape{x[0], x[1], x[2] * x[3], mask[0], c.offset(0, 0)};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::WindowMaskShape s = shape_of(c);
    auto y = device_copy(c.input(0));
    cuda::add_window_mask_forward<T>(context(), s, y.data(), in(c.input(1)), y.data());
    return Values<T>{hold(std::move(y), c.input(0).dims())};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    auto dmask = gradient_buffer(g, 1);
    if (g.wants(1)) cuda::add_window_mask_backward<T>(context(), shape_of(g.call), in(g.grad(0)), dmask.data());
    return Values<T>{g.grad(0), gradient_of(g, 1, std::move(dmask))};
  };
  return k;
}

// add_pair_bias(x [n, m, h, t, u], bias [n, t, u, h]).
template <class T>
Kernel<T> add_pair_bias_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_rank(c, 0, 5);
    require_rank(c, 1, 4);
    const Dims& x = c.input(0).dims();
    if (c.input(1).dims() != Dims{x[0], x[3], x[4], x[2]})
      throw LoomError(c.op + ": the bias is not [" + std::to_string(x[0]) + ", " + std::to_string(x[3]) + ", " + std::to_string(x[4]) +
                      ", " + std::to_string(x[2]) + "] (batch, t, u, heads of the scores)");
    return cuda::PairBiasShape{x[0], x[1], x[2], x[3], x[4]};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::PairBiasShape s = shape_of(c);
    auto y = device_copy(c.input(0));
    cuda::add_pair_bias_forward<T>(context(), s, y.data(), in(c.input(1)), y.data());
    return Values<T>{hold(std::move(y), c.input(0).dims())};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    auto dbias = gradient_buffer(g, 1);
    if (g.wants(1)) cuda::add_pair_bias_backward<T>(context(), shape_of(g.call), in(g.grad(0)), dbias.data());
    return Values<T>{g.grad(0), gradient_of(g, 1, std::move(dbias))};
  };
  return k;
}

// Whether inputs 0 and 1 agree in every dimension before the last `tail`.
template <class T>
void require_same_batches(const ValueCall<T>& c, std::size_t tail) {
  require_min_rank(c, 0, tail);
  const Dims& a = c.input(0).dims();
  const Dims& b = c.input(1).dims();
  if (b.size() != a.size() || !std::equal(a.begin(), a.end() - static_cast<std::ptrdiff_t>(tail), b.begin()))
    throw LoomError(c.op + ": the inputs differ in rank or in a batch dimension");
}

// Input 0's dimensions before the last `tail`, then `rest`.
template <class T>
Dims batch_dims_then(const ValueCall<T>& c, std::size_t tail, std::initializer_list<std::int64_t> rest) {
  const Dims& a = c.input(0).dims();
  Dims dims(a.begin(), a.end() - static_cast<std::ptrdiff_t>(tail));
  dims.insert(dims.end(), rest);
  return dims;
}

// outer_product_mean(a [*n, s, r, c], b [*n, s, u, e]) -> [*n, r, u, c * e], divided by the
// logical s (a piece of s gives partial sums of the mean).
template <class T>
Kernel<T> outer_product_mean_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_same_batches(c, 2);
    require_min_rank(c, 0, 3);
    const Dims& a = c.input(0).dims();
    const Dims& b = c.input(1).dims();
    const std::size_t r = a.size();
    require_whole(c, 1, r - 1, "the output's last dimension interleaves c and e");
    return cuda::OuterProductShape{product(a, 0, r - 3), a[r - 3], a[r - 2], a[r - 1], b[r - 2], b[r - 1]};
  };
  auto scale_of = [](const ValueCall<T>& c) { return T(1) / static_cast<T>(c.logical_size(0, c.input(0).rank() - 3)); };
  Kernel<T> k;
  k.forward_values = [=](const ValueCall<T>& c) {
    const cuda::OuterProductShape s = shape_of(c);
    auto out = scratch<T>(static_cast<std::size_t>(s.batches * s.r * s.u * s.c * s.e));
    cuda::outer_product_mean_forward<T>(context(), s, scale_of(c), in(c.input(0)), in(c.input(1)), out.data());
    return Values<T>{hold(std::move(out), batch_dims_then(c, 3, {s.r, s.u, s.c * s.e}))};
  };
  k.backward_values = [=](const ValueGradCall<T>& g) {
    const cuda::OuterProductShape s = shape_of(g.call);
    auto da = gradient_buffer(g, 0), db = gradient_buffer(g, 1);
    cuda::outer_product_mean_backward<T>(context(), s, scale_of(g.call), in(g.input(0)), in(g.input(1)), in(g.grad(0)), da.data(),
                                         db.data());
    return Values<T>{gradient_of(g, 0, std::move(da)), gradient_of(g, 1, std::move(db))};
  };
  return k;
}

// triangle_mult_out(a [*n, i, k, c], b [*n, j, k, c]) and triangle_mult_in(a [*n, k, i, c],
// b [*n, k, j, c]) -> [*n, i, j, c]; pieces of i, j, k and c are rectangular products.
template <class T>
Kernel<T> triangle_mult_kernel(bool incoming) {
  auto shape_of = [incoming](const ValueCall<T>& c) {
    require_min_rank(c, 0, 3);
    require_same_batches(c, 3);
    const Dims& a = c.input(0).dims();
    const Dims& b = c.input(1).dims();
    const std::size_t r = a.size();
    const std::size_t summed = incoming ? r - 3 : r - 2, kept = incoming ? r - 2 : r - 3;
    if (a[summed] != b[summed] || a[r - 1] != b[r - 1])
      throw LoomError(c.op + ": the inputs differ in the summed edge dimension or in the channels");
    return cuda::TriangleShape{product(a, 0, r - 3), a[kept], b[kept], a[summed], a[r - 1], incoming};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::TriangleShape s = shape_of(c);
    auto out = scratch<T>(static_cast<std::size_t>(s.batches * s.i * s.j * s.c));
    cuda::triangle_mult_forward<T>(context(), s, in(c.input(0)), in(c.input(1)), out.data());
    return Values<T>{hold(std::move(out), batch_dims_then(c, 3, {s.i, s.j, s.c}))};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const cuda::TriangleShape s = shape_of(g.call);
    auto da = gradient_buffer(g, 0), db = gradient_buffer(g, 1);
    cuda::triangle_mult_backward<T>(context(), s, in(g.input(0)), in(g.input(1)), in(g.grad(0)), da.data(), db.data());
    return Values<T>{gradient_of(g, 0, std::move(da)), gradient_of(g, 1, std::move(db))};
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::DotAttention, dot_attention_kernel<T>());
  k.provide<T>(NativeKernel::WindowPartition, window_partition_kernel<T>());
  k.provide<T>(NativeKernel::WindowReverse, window_reverse_kernel<T>());
  k.provide<T>(NativeKernel::CyclicShift, cyclic_shift_kernel<T>());
  k.provide<T>(NativeKernel::AddWindowMask, add_window_mask_kernel<T>());
  k.provide<T>(NativeKernel::AddPairBias, add_pair_bias_kernel<T>());
  k.provide<T>(NativeKernel::OuterProductMean, outer_product_mean_kernel<T>());
  k.provide<T>(NativeKernel::TriangleMultOut, triangle_mult_kernel<T>(false));
  k.provide<T>(NativeKernel::TriangleMultIn, triangle_mult_kernel<T>(true));
}

}  // namespace

void add_model_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::cuda_adapter

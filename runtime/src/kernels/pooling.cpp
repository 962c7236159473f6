// Pooling over NCHW planes: max (padding never wins; the first maximum in window order takes the
// gradient), average counting the padding (always divided by kh * kw), and global average.
#include <limits>

#include "eigen_views.hpp"
#include "kernels.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

struct PoolGeometry {
  std::int64_t planes, height, width, kh, kw, stride, pad, out_h, out_w;
};

template <class T>
PoolGeometry pool_geometry(const OpCall<T>& c) {
  const auto& d = c.input(0).dims;
  PoolGeometry g{d[0] * d[1], d[2], d[3], c.attr("kh"), c.attr("kw"), c.attr("stride"), c.attr("pad"), 0, 0};
  g.out_h = (g.height + 2 * g.pad - g.kh) / g.stride + 1;
  g.out_w = (g.width + 2 * g.pad - g.kw) / g.stride + 1;
  return g;
}

// Calls visit(out_offset, in_offset) for every in-range input element of every window.
template <class Visit>
void for_each_window(const PoolGeometry& g, Visit&& visit) {
  for (std::int64_t p = 0; p < g.planes; ++p)
    for (std::int64_t i = 0; i < g.out_h; ++i)
      for (std::int64_t j = 0; j < g.out_w; ++j) {
        const std::int64_t out = (p * g.out_h + i) * g.out_w + j;
        for (std::int64_t r = 0; r < g.kh; ++r) {
          const std::int64_t y = i * g.stride + r - g.pad;
          if (y < 0 || y >= g.height) continue;
          for (std::int64_t s = 0; s < g.kw; ++s) {
            const std::int64_t x = j * g.stride + s - g.pad;
            if (x >= 0 && x < g.width) visit(out, (p * g.height + y) * g.width + x);
          }
        }
      }
}

template <class T>
std::vector<std::int64_t> pooled_dims(const Tensor<T>& x, const PoolGeometry& g) {
  return {x.dims[0], x.dims[1], g.out_h, g.out_w};
}

// The input offset holding each window's first maximum.
template <class T>
std::vector<std::size_t> argmax(const Tensor<T>& x, const PoolGeometry& g) {
  const auto outputs = static_cast<std::size_t>(g.planes * g.out_h * g.out_w);
  std::vector<std::size_t> best(outputs, 0);
  std::vector<T> best_value(outputs, -std::numeric_limits<T>::infinity());
  std::vector<bool> seen(outputs, false);
  for_each_window(g, [&](std::int64_t out, std::int64_t in) {
    const auto o = static_cast<std::size_t>(out), i = static_cast<std::size_t>(in);
    if (!seen[o] || best_value[o] < x.data[i]) {
      seen[o] = true;
      best_value[o] = x.data[i];
      best[o] = i;
    }
  });
  return best;
}

template <class T>
Kernel<T> max_pool_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const PoolGeometry g = pool_geometry(c);
    const auto& x = c.input(0);
    Tensor<T> y(pooled_dims(x, g));
    const auto best = argmax(x, g);
    for (std::size_t o = 0; o < y.size(); ++o) y.data[o] = x.data[best[o]];
    return Tensors<T>{std::move(y)};
  };
  k.backward = [](const GradCall<T>& gc) {
    const PoolGeometry g = pool_geometry(gc.call);
    const auto best = argmax(gc.input(0), g);
    Tensor<T> dx(gc.input(0).dims, T(0));
    for (std::size_t o = 0; o < best.size(); ++o) dx.data[best[o]] += gc.grad(0).data[o];
    return Tensors<T>{std::move(dx)};
  };
  return k;
}

template <class T>
Kernel<T> avg_pool_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const PoolGeometry g = pool_geometry(c);
    Tensor<T> y(pooled_dims(c.input(0), g), T(0));
    for_each_window(g, [&](std::int64_t out, std::int64_t in) {
      y.data[static_cast<std::size_t>(out)] += c.input(0).data[static_cast<std::size_t>(in)];
    });
    array(y) /= T(static_cast<double>(g.kh * g.kw));
    return Tensors<T>{std::move(y)};
  };
  k.backward = [](const GradCall<T>& gc) {
    const PoolGeometry g = pool_geometry(gc.call);
    Tensor<T> dx(gc.input(0).dims, T(0));
    const T scale = T(1) / T(static_cast<double>(g.kh * g.kw));
    for_each_window(g, [&](std::int64_t out, std::int64_t in) {
      dx.data[static_cast<std::size_t>(in)] += gc.grad(0).data[static_cast<std::size_t>(out)] * scale;
    });
    return Tensors<T>{std::move(dx)};
  };
  return k;
}

template <class T>
Kernel<T> global_avg_pool_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const auto& x = c.input(0);
    const std::int64_t planes = x.dims[0] * x.dims[1], plane = x.dims[2] * x.dims[3];
    Tensor<T> y({x.dims[0], x.dims[1], 1, 1});
    matrix(y, planes, 1) = matrix(x, planes, plane).rowwise().mean();
    return Tensors<T>{std::move(y)};
  };
  k.backward = [](const GradCall<T>& gc) {
    const auto& x = gc.input(0);
    const std::int64_t planes = x.dims[0] * x.dims[1], plane = x.dims[2] * x.dims[3];
    Tensor<T> dx(x.dims);
    matrix(dx, planes, plane) = (matrix(gc.grad(0), planes, 1) / T(static_cast<double>(plane))).replicate(1, as_index(plane));
    return Tensors<T>{std::move(dx)};
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::MaxPool, max_pool_kernel<T>());
  k.provide<T>(NativeKernel::AvgPool, avg_pool_kernel<T>());
  k.provide<T>(NativeKernel::GlobalAvgPool, global_avg_pool_kernel<T>());
}

}  // namespace

void add_pooling_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

// Softmax and layer normalization over the last axis; inference batch normalization (NCHW) with
// every input differentiable. Epsilon 1e-5, as the specs fix it.
#include <cmath>

#include "eigen_views.hpp"
#include "kernels.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;
constexpr double kEpsilon = 1e-5;

template <class T>
Kernel<T> softmax_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const Tensor<T>& x = c.input(0);
    const std::int64_t rows = leading_rows(x.dims), n = last_dim(x.dims);
    Tensor<T> y(x.dims);
    auto X = matrix(x, rows, n).array();
    auto Y = matrix(y, rows, n).array();
    Y = (X.colwise() - X.rowwise().maxCoeff()).exp();
    Y.colwise() /= Y.rowwise().sum();
    return Tensors<T>{std::move(y)};
  };
  k.backward = [](const GradCall<T>& g) {
    const Tensor<T>& y = g.output(0);
    const std::int64_t rows = leading_rows(y.dims), n = last_dim(y.dims);
    Tensor<T> dx(y.dims);
    auto Y = matrix(y, rows, n).array();
    auto dY = matrix(g.grad(0), rows, n).array();
    matrix(dx, rows, n).array() = Y * (dY.colwise() - (dY * Y).rowwise().sum());
    return Tensors<T>{std::move(dx)};
  };
  return k;
}

// Per-row mean and 1 / sqrt(variance + eps), and the normalized rows.
template <class T>
struct RowStats {
  RowMatrix<T> normalized;
  Eigen::Array<T, Eigen::Dynamic, 1> inv_std;
};

template <class T>
RowStats<T> row_stats(const Tensor<T>& x) {
  const std::int64_t rows = leading_rows(x.dims), n = last_dim(x.dims);
  auto X = matrix(x, rows, n).array();
  RowStats<T> s;
  const auto centered = (X.colwise() - X.rowwise().mean()).eval();
  s.inv_std = ((centered * centered).rowwise().mean() + T(kEpsilon)).rsqrt();
  s.normalized = (centered.colwise() * s.inv_std).matrix();
  return s;
}

template <class T>
Kernel<T> layer_norm_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const Tensor<T>& x = c.input(0);
    const std::int64_t rows = leading_rows(x.dims), n = last_dim(x.dims);
    Tensor<T> y(x.dims);
    const RowStats<T> s = row_stats(x);
    matrix(y, rows, n).array() =
        (s.normalized.array().rowwise() * row_vector(c.input(1)).array()).rowwise() + row_vector(c.input(2)).array();
    return Tensors<T>{std::move(y)};
  };
  k.backward = [](const GradCall<T>& g) {
    const Tensor<T>& x = g.input(0);
    const std::int64_t rows = leading_rows(x.dims), n = last_dim(x.dims);
    const RowStats<T> s = row_stats(x);
    auto dY = matrix(g.grad(0), rows, n).array();
    Tensors<T> grads{Tensor<T>(x.dims), Tensor<T>(g.input(1).dims), Tensor<T>(g.input(2).dims)};
    matrix(grads[1], 1, n) = (dY * s.normalized.array()).colwise().sum().matrix();
    matrix(grads[2], 1, n) = dY.colwise().sum().matrix();
    const auto dxhat = (dY.rowwise() * row_vector(g.input(1)).array()).eval();
    const auto mean_dxhat = dxhat.rowwise().mean().eval();
    const auto mean_dxhat_xhat = (dxhat * s.normalized.array()).rowwise().mean().eval();
    matrix(grads[0], rows, n).array() =
        ((dxhat.colwise() - mean_dxhat) - s.normalized.array().colwise() * mean_dxhat_xhat).colwise() * s.inv_std;
    return grads;
  };
  return k;
}

// batchnorm(x [n, c, h, w], scale, bias, mean, var): each (sample, channel) plane is contiguous.
template <class T>
Kernel<T> batchnorm_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const Tensor<T>& x = c.input(0);
    const std::int64_t batch = x.dims[0], channels = x.dims[1], plane = x.dims[2] * x.dims[3];
    Tensor<T> y(x.dims);
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t f = 0; f < channels; ++f) {
        const auto fi = static_cast<std::size_t>(f);
        const T a = c.input(1).data[fi] / std::sqrt(c.input(4).data[fi] + T(kEpsilon));
        const std::int64_t at = (b * channels + f) * plane;
        matrix(y, 1, plane, at).array() = (matrix(x, 1, plane, at).array() - c.input(3).data[fi]) * a + c.input(2).data[fi];
      }
    return Tensors<T>{std::move(y)};
  };
  k.backward = [](const GradCall<T>& g) {
    const Tensor<T>& x = g.input(0);
    const std::int64_t batch = x.dims[0], channels = x.dims[1], plane = x.dims[2] * x.dims[3];
    Tensors<T> grads{Tensor<T>(x.dims)};
    for (std::size_t i = 1; i < 5; ++i) grads.emplace_back(g.input(i).dims, T(0));
    for (std::int64_t f = 0; f < channels; ++f) {
      const auto fi = static_cast<std::size_t>(f);
      const T scale = g.input(1).data[fi], mean = g.input(3).data[fi], var = g.input(4).data[fi];
      const T inv_std = T(1) / std::sqrt(var + T(kEpsilon));
      T sum_dy = 0, sum_dy_centered = 0;
      for (std::int64_t b = 0; b < batch; ++b) {
        const std::int64_t at = (b * channels + f) * plane;
        auto dY = matrix(g.grad(0), 1, plane, at).array();
        matrix(grads[0], 1, plane, at).array() = dY * (scale * inv_std);
        sum_dy += dY.sum();
        sum_dy_centered += (dY * (matrix(x, 1, plane, at).array() - mean)).sum();
      }
      grads[1].data[fi] = sum_dy_centered * inv_std;
      grads[2].data[fi] = sum_dy;
      grads[3].data[fi] = -sum_dy * scale * inv_std;
      grads[4].data[fi] = T(-0.5) * sum_dy_centered * scale * inv_std * inv_std * inv_std;
    }
    return grads;
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::Softmax, softmax_kernel<T>());
  k.provide<T>(NativeKernel::LayerNorm, layer_norm_kernel<T>());
  k.provide<T>(NativeKernel::BatchNorm, batchnorm_kernel<T>());
}

}  // namespace

void add_normalization_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

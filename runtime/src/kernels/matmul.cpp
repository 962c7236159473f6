// Matrix products: matmul, matmul_relu, linear, linear_nobias, batch_matmul, transpose, and the
// biases added to their results (bias_add along the last axis, bias_add_axis along any).
// Leading dimensions of `linear` are flattened into rows; batch_matmul runs one GEMM per batch.
#include "eigen_views.hpp"
#include "kernels.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

// y = x w (+ bias) with x [rows, k], w [k, n]; optionally relu.
template <class T>
Tensor<T> dense_forward(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>* bias, bool relu) {
  const std::int64_t k = w.dims[0], n = w.dims[1], rows = static_cast<std::int64_t>(x.size()) / k;
  std::vector<std::int64_t> dims = x.dims;
  dims.back() = n;
  Tensor<T> y(dims);
  auto Y = matrix(y, rows, n);
  Y.noalias() = matrix(x, rows, k) * matrix(w, k, n);
  if (bias) Y.rowwise() += row_vector(*bias);
  if (relu) array(y) = array(y).max(T(0));
  return y;
}

// Gradients of x, w and (when present) bias for y = x w + bias, given dy.
template <class T>
Tensors<T> dense_backward(const GradCall<T>& g, const Tensor<T>& dy, bool has_bias) {
  const Tensor<T>& x = g.input(0);
  const Tensor<T>& w = g.input(1);
  const std::int64_t k = w.dims[0], n = w.dims[1], rows = static_cast<std::int64_t>(x.size()) / k;
  Tensors<T> grads(has_bias ? 3 : 2);
  if (g.wants(0)) {
    grads[0] = Tensor<T>(x.dims);
    matrix(grads[0], rows, k).noalias() = matrix(dy, rows, n) * matrix(w, k, n).transpose();
  }
  if (g.wants(1)) {
    grads[1] = Tensor<T>(w.dims);
    matrix(grads[1], k, n).noalias() = matrix(x, rows, k).transpose() * matrix(dy, rows, n);
  }
  if (has_bias && g.wants(2)) {
    grads[2] = Tensor<T>(g.input(2).dims);
    matrix(grads[2], 1, n) = matrix(dy, rows, n).colwise().sum();
  }
  return grads;
}

template <class T>
Kernel<T> dense_kernel(bool has_bias, bool relu) {
  Kernel<T> k;
  k.forward = [=](const OpCall<T>& c) { return Tensors<T>{dense_forward(c.input(0), c.input(1), has_bias ? &c.input(2) : nullptr, relu)}; };
  k.backward = [=](const GradCall<T>& g) {
    if (!relu) return dense_backward(g, g.grad(0), has_bias);
    Tensor<T> dy = g.grad(0);
    array(dy) = (array(g.output(0)) > T(0)).select(array(dy), T(0));
    return dense_backward(g, dy, has_bias);
  };
  return k;
}

// out[b] = x[b] y[b] over the flattened batch dimensions.
template <class T>
Kernel<T> batch_matmul_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const auto& x = c.input(0);
    const auto& y = c.input(1);
    const std::size_t r = x.rank();
    const std::int64_t m = x.dims[r - 2], kk = x.dims[r - 1], n = y.dims[r - 1], batches = product(x.dims, 0, r - 2);
    std::vector<std::int64_t> dims = x.dims;
    dims.back() = n;
    Tensor<T> out(dims);
    for (std::int64_t b = 0; b < batches; ++b)
      matrix(out, m, n, b * m * n).noalias() = matrix(x, m, kk, b * m * kk) * matrix(y, kk, n, b * kk * n);
    return Tensors<T>{std::move(out)};
  };
  k.backward = [](const GradCall<T>& g) {
    const auto& x = g.input(0);
    const auto& y = g.input(1);
    const auto& dout = g.grad(0);
    const std::size_t r = x.rank();
    const std::int64_t m = x.dims[r - 2], kk = x.dims[r - 1], n = y.dims[r - 1], batches = product(x.dims, 0, r - 2);
    Tensors<T> grads(2);
    if (g.wants(0)) grads[0] = Tensor<T>(x.dims);
    if (g.wants(1)) grads[1] = Tensor<T>(y.dims);
    for (std::int64_t b = 0; b < batches; ++b) {
      auto dO = matrix(dout, m, n, b * m * n);
      if (g.wants(0)) matrix(grads[0], m, kk, b * m * kk).noalias() = dO * matrix(y, kk, n, b * kk * n).transpose();
      if (g.wants(1)) matrix(grads[1], kk, n, b * kk * n).noalias() = matrix(x, m, kk, b * m * kk).transpose() * dO;
    }
    return grads;
  };
  return k;
}

template <class T>
Kernel<T> bias_add_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    Tensor<T> out = c.input(0);
    const std::int64_t n = last_dim(out.dims);
    matrix(out, leading_rows(out.dims), n).rowwise() += row_vector(c.input(1));
    return Tensors<T>{std::move(out)};
  };
  k.backward = [](const GradCall<T>& g) {
    const auto& dy = g.grad(0);
    const std::int64_t n = last_dim(dy.dims);
    Tensors<T> grads{dy, Tensor<T>(g.input(1).dims)};
    matrix(grads[1], 1, n) = matrix(dy, leading_rows(dy.dims), n).colwise().sum();
    return grads;
  };
  return k;
}

// x [*p, n, *q] plus bias [n] along dimension `axis`: x as [outer, n, inner] blocks, the bias
// added down each block's columns.
template <class T>
Kernel<T> bias_add_axis_kernel() {
  struct Sizes {
    std::int64_t outer, n, inner;
  };
  auto sizes = [](const OpCall<T>& c) {
    const auto& x = c.input(0);
    const std::size_t axis = static_cast<std::size_t>(c.attr("axis"));
    return Sizes{product(x.dims, 0, axis), x.dims.at(axis), product(x.dims, axis + 1, x.rank())};
  };
  Kernel<T> k;
  k.forward = [sizes](const OpCall<T>& c) {
    const Sizes z = sizes(c);
    Tensor<T> out = c.input(0);
    for (std::int64_t o = 0; o < z.outer; ++o) matrix(out, z.n, z.inner, o * z.n * z.inner).colwise() += column_vector(c.input(1));
    return Tensors<T>{std::move(out)};
  };
  k.backward = [sizes](const GradCall<T>& g) {
    const Sizes z = sizes(g.call);
    const auto& dy = g.grad(0);
    Tensors<T> grads{dy, Tensor<T>(g.input(1).dims, T(0))};
    auto dbias = matrix(grads[1], z.n, 1);
    for (std::int64_t o = 0; o < z.outer; ++o) dbias += matrix(dy, z.n, z.inner, o * z.n * z.inner).rowwise().sum();
    return grads;
  };
  return k;
}

// Swaps the last two dimensions of every matrix of the batch.
template <class T>
Tensor<T> transpose_last(const Tensor<T>& x) {
  const std::size_t r = x.rank();
  const std::int64_t m = x.dims[r - 2], n = x.dims[r - 1], batches = product(x.dims, 0, r - 2);
  std::vector<std::int64_t> dims = x.dims;
  std::swap(dims[r - 2], dims[r - 1]);
  Tensor<T> out(dims);
  for (std::int64_t b = 0; b < batches; ++b) matrix(out, n, m, b * m * n) = matrix(x, m, n, b * m * n).transpose();
  return out;
}

template <class T>
Kernel<T> transpose_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) { return Tensors<T>{transpose_last(c.input(0))}; };
  k.backward = [](const GradCall<T>& g) { return Tensors<T>{transpose_last(g.grad(0))}; };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::Dense, dense_kernel<T>(false, false));
  k.provide<T>(NativeKernel::DenseRelu, dense_kernel<T>(false, true));
  k.provide<T>(NativeKernel::DenseBias, dense_kernel<T>(true, false));
  k.provide<T>(NativeKernel::BatchMatmul, batch_matmul_kernel<T>());
  k.provide<T>(NativeKernel::BiasAdd, bias_add_kernel<T>());
  k.provide<T>(NativeKernel::BiasAddAxis, bias_add_axis_kernel<T>());
  k.provide<T>(NativeKernel::Transpose, transpose_kernel<T>());
}

}  // namespace

void add_matmul_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

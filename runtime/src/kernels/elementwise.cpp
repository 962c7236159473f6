// Activations and elementwise arithmetic, through Eigen's array expressions.
#include <cmath>
#include <numbers>

#include "eigen_views.hpp"
#include "kernels.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

// y = f(x) elementwise, `f` given x as an Eigen array, so that it may run Eigen's packets; dy/dx =
// derivative(x, y).
template <class T, class F, class D>
Kernel<T> unary_kernel(F f, D derivative) {
  Kernel<T> k;
  k.forward = [f](const OpCall<T>& c) {
    Tensor<T> y(c.input(0).dims);
    array(y) = f(array(c.input(0)));
    return Tensors<T>{std::move(y)};
  };
  k.backward = [derivative](const GradCall<T>& g) {
    Tensor<T> dx(g.input(0).dims);
    array(dx) = array(g.grad(0)) * array(g.input(0)).binaryExpr(array(g.output(0)), derivative);
    return Tensors<T>{std::move(dx)};
  };
  return k;
}

template <class T>
T gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
}
template <class T>
T gelu_derivative(T x) {
  return T(0.5) * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2))) +
         x * std::exp(T(-0.5) * x * x) * T(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
}

// `f` of each element on its own, for unary_kernel.
template <class F>
auto each(F f) {
  return [f](const auto& x) { return x.unaryExpr(f); };
}

template <class T>
void add_unary(BackendKernels& k) {
  // Eigen's max runs without a branch per element (and keeps a NaN), where a scalar loop's branch
  // on the sign mispredicts on half of a layer's values: 4 ns an element rather than 0.1.
  k.provide<T>(NativeKernel::Relu,
               unary_kernel<T>([](const auto& x) { return x.max(T(0)); }, [](T x, T) { return x < T(0) ? T(0) : T(1); }));
  k.provide<T>(NativeKernel::Sigmoid,
               unary_kernel<T>(each([](T x) { return T(1) / (T(1) + std::exp(-x)); }), [](T, T y) { return y * (T(1) - y); }));
  k.provide<T>(NativeKernel::Tanh, unary_kernel<T>(each([](T x) { return std::tanh(x); }), [](T, T y) { return T(1) - y * y; }));
  k.provide<T>(NativeKernel::Gelu, unary_kernel<T>(each([](T x) { return gelu(x); }), [](T x, T) { return gelu_derivative(x); }));
  k.provide<T>(NativeKernel::Exp, unary_kernel<T>(each([](T x) { return std::exp(x); }), [](T, T y) { return y; }));
  k.provide<T>(NativeKernel::Sqrt, unary_kernel<T>(each([](T x) { return std::sqrt(x); }), [](T, T y) { return T(0.5) / y; }));
  k.provide<T>(NativeKernel::Erf, unary_kernel<T>(each([](T x) { return std::erf(x); }),
                                                  [](T x, T) { return T(2 * std::numbers::inv_sqrtpi) * std::exp(-x * x); }));
  const auto one = [](T, T) { return T(1); };
  k.provide<T>(NativeKernel::Identity, unary_kernel<T>([](const auto& x) { return x; }, one));
}

enum class Arith { Add, Sub, Mul, Div };

template <class T>
Kernel<T> binary_kernel(Arith op) {
  Kernel<T> k;
  k.forward = [op](const OpCall<T>& c) {
    Tensor<T> y(c.input(0).dims);
    auto x0 = array(c.input(0));
    auto x1 = array(c.input(1));
    switch (op) {
      case Arith::Add: array(y) = x0 + x1; break;
      case Arith::Sub: array(y) = x0 - x1; break;
      case Arith::Mul: array(y) = x0 * x1; break;
      case Arith::Div: array(y) = x0 / x1; break;
    }
    return Tensors<T>{std::move(y)};
  };
  k.backward = [op](const GradCall<T>& g) {
    Tensors<T> grads{Tensor<T>(g.input(0).dims), Tensor<T>(g.input(1).dims)};
    auto dy = array(g.grad(0));
    auto x0 = array(g.input(0));
    auto x1 = array(g.input(1));
    switch (op) {
      case Arith::Add:
        array(grads[0]) = dy;
        array(grads[1]) = dy;
        break;
      case Arith::Sub:
        array(grads[0]) = dy;
        array(grads[1]) = -dy;
        break;
      case Arith::Mul:
        array(grads[0]) = dy * x1;
        array(grads[1]) = dy * x0;
        break;
      case Arith::Div:
        array(grads[0]) = dy / x1;
        array(grads[1]) = -dy * x0 / (x1 * x1);
        break;
    }
    return grads;
  };
  return k;
}

// x op c with c a rank-0 tensor.
template <class T>
Kernel<T> scalar_kernel(Arith op) {
  Kernel<T> k;
  k.forward = [op](const OpCall<T>& c) {
    Tensor<T> y(c.input(0).dims);
    const T s = c.input(1).data.at(0);
    array(y) = op == Arith::Mul ? (array(c.input(0)) * s).eval() : (array(c.input(0)) + s).eval();
    return Tensors<T>{std::move(y)};
  };
  k.backward = [op](const GradCall<T>& g) {
    const T s = g.input(1).data.at(0);
    Tensors<T> grads{Tensor<T>(g.input(0).dims), Tensor<T>(g.input(1).dims)};
    auto dy = array(g.grad(0));
    if (op == Arith::Mul) {
      array(grads[0]) = dy * s;
      grads[1].data[0] = (dy * array(g.input(0))).sum();
    } else {
      array(grads[0]) = dy;
      grads[1].data[0] = dy.sum();
    }
    return grads;
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  add_unary<T>(k);
  k.provide<T>(NativeKernel::Add, binary_kernel<T>(Arith::Add));
  k.provide<T>(NativeKernel::Sub, binary_kernel<T>(Arith::Sub));
  k.provide<T>(NativeKernel::Mul, binary_kernel<T>(Arith::Mul));
  k.provide<T>(NativeKernel::Div, binary_kernel<T>(Arith::Div));
  k.provide<T>(NativeKernel::ScalarMul, scalar_kernel<T>(Arith::Mul));
  k.provide<T>(NativeKernel::ScalarAdd, scalar_kernel<T>(Arith::Add));
}

}  // namespace

void add_elementwise_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

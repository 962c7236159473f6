// One LSTM step: z = x w + h u + bias with gates (input, forget, cell, output) in blocks of n;
// c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c'). Outputs (h_next, c_next).
#include "eigen_views.hpp"
#include "kernels.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

template <class T>
struct Gates {
  RowMatrix<T> i, f, g, o;  // activated: sigmoid, sigmoid, tanh, sigmoid
};

template <class T>
Gates<T> gates(const OpCall<T>& c) {
  const auto& x = c.input(0);
  const std::int64_t b = x.dims[0], k = x.dims[1], n = c.input(1).dims[1];
  RowMatrix<T> z = matrix(x, b, k) * matrix(c.input(3), k, 4 * n) + matrix(c.input(1), b, n) * matrix(c.input(4), n, 4 * n);
  z.rowwise() += row_vector(c.input(5));
  const auto sigmoid = [](const auto& block) { return (T(1) / (T(1) + (-block.array()).exp())).matrix().eval(); };
  const auto cols = [&](std::int64_t gate) { return z.middleCols(as_index(gate * n), as_index(n)); };
  return {sigmoid(cols(0)), sigmoid(cols(1)), cols(2).array().tanh().matrix().eval(), sigmoid(cols(3))};
}

template <class T>
Kernel<T> lstm_cell_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const std::int64_t b = c.input(0).dims[0], n = c.input(1).dims[1];
    const Gates<T> g = gates(c);
    Tensors<T> out{Tensor<T>({b, n}), Tensor<T>({b, n})};
    auto cell = matrix(out[1], b, n);
    cell = (g.f.array() * matrix(c.input(2), b, n).array() + g.i.array() * g.g.array()).matrix();
    matrix(out[0], b, n) = (g.o.array() * cell.array().tanh()).matrix();
    return out;
  };
  k.backward = [](const GradCall<T>& gc) {
    const auto& x = gc.input(0);
    const std::int64_t b = x.dims[0], kk = x.dims[1], n = gc.input(1).dims[1];
    const Gates<T> g = gates(gc.call);
    const auto tanh_cell = matrix(gc.output(1), b, n).array().tanh().eval();
    const auto dh = matrix(gc.grad(0), b, n).array();
    const auto dcell = (matrix(gc.grad(1), b, n).array() + dh * g.o.array() * (T(1) - tanh_cell * tanh_cell)).eval();
    RowMatrix<T> dz(as_index(b), as_index(4 * n));
    const auto sig_grad = [](const RowMatrix<T>& s) { return (s.array() * (T(1) - s.array())).eval(); };
    dz.middleCols(0, as_index(n)) = (dcell * g.g.array() * sig_grad(g.i)).matrix();
    dz.middleCols(as_index(n), as_index(n)) = (dcell * matrix(gc.input(2), b, n).array() * sig_grad(g.f)).matrix();
    dz.middleCols(as_index(2 * n), as_index(n)) = (dcell * g.i.array() * (T(1) - g.g.array() * g.g.array())).matrix();
    dz.middleCols(as_index(3 * n), as_index(n)) = (dh * tanh_cell * sig_grad(g.o)).matrix();
    Tensors<T> grads;
    for (std::size_t i = 0; i < 6; ++i) grads.emplace_back(gc.input(i).dims);
    matrix(grads[0], b, kk).noalias() = dz * matrix(gc.input(3), kk, 4 * n).transpose();
    matrix(grads[1], b, n).noalias() = dz * matrix(gc.input(4), n, 4 * n).transpose();
    matrix(grads[2], b, n) = (dcell * g.f.array()).matrix();
    matrix(grads[3], kk, 4 * n).noalias() = matrix(x, b, kk).transpose() * dz;
    matrix(grads[4], n, 4 * n).noalias() = matrix(gc.input(1), b, n).transpose() * dz;
    matrix(grads[5], 1, 4 * n) = dz.colwise().sum();
    return grads;
  };
  return k;
}

}  // namespace

void add_lstm_kernels(BackendKernels& k) {
  k.provide<float>(NativeKernel::LstmCell, lstm_cell_kernel<float>());
  k.provide<double>(NativeKernel::LstmCell, lstm_cell_kernel<double>());
}

}  // namespace loom::runtime::kernels

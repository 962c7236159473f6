#include "loom/runtime/cuda/lstm.hpp"

#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"
#include "loom/runtime/cuda/device_buffer.hpp"
#include "loom/runtime/cuda/elementwise.hpp"
#include "loom/runtime/cuda/gemm.hpp"

namespace loom::runtime::cuda {
namespace {

template <class T>
__device__ T sigmoid(T v) {
  return T(1) / (T(1) + exp(-v));
}

// The activated gates of element (row, j) from the pre-activations z [batch, 4 hidden] and bias.
template <class T>
struct Gates {
  T i, f, g, o;
};

template <class T>
__device__ Gates<T> gates_at(std::int64_t hidden, std::int64_t row, std::int64_t j, const T* z, const T* bias) {
  const T* zr = z + row * 4 * hidden;
  return {sigmoid(zr[j] + bias[j]), sigmoid(zr[hidden + j] + bias[hidden + j]), tanh(zr[2 * hidden + j] + bias[2 * hidden + j]),
          sigmoid(zr[3 * hidden + j] + bias[3 * hidden + j])};
}

template <class T>
__global__ void lstm_pointwise_forward_kernel(std::int64_t batch, std::int64_t hidden, const T* z, const T* bias, const T* c, T* h_next,
                                              T* c_next) {
  LOOM_GRID_STRIDE_LOOP(at, batch * hidden) {
    const Gates<T> g = gates_at(hidden, at / hidden, at % hidden, z, bias);
    const T cell = g.f * c[at] + g.i * g.g;
    c_next[at] = cell;
    h_next[at] = g.o * tanh(cell);
  }
}

// dz [batch, 4 hidden] (the gradient of the pre-activations) and, when asked, dc.
template <class T>
__global__ void lstm_pointwise_backward_kernel(std::int64_t batch, std::int64_t hidden, const T* z, const T* bias, const T* c,
                                               const T* c_next, const T* dh_next, const T* dc_next, T* dz, T* dc) {
  LOOM_GRID_STRIDE_LOOP(at, batch * hidden) {
    const std::int64_t row = at / hidden, j = at % hidden;
    const Gates<T> g = gates_at(hidden, row, j, z, bias);
    const T tanh_cell = tanh(c_next[at]);
    const T dh = dh_next[at];
    const T dcell = dc_next[at] + dh * g.o * (T(1) - tanh_cell * tanh_cell);
    T* dzr = dz + row * 4 * hidden;
    dzr[j] = dcell * g.g * (g.i * (T(1) - g.i));
    dzr[hidden + j] = dcell * c[at] * (g.f * (T(1) - g.f));
    dzr[2 * hidden + j] = dcell * g.i * (T(1) - g.g * g.g);
    dzr[3 * hidden + j] = dh * tanh_cell * (g.o * (T(1) - g.o));
    if (dc) dc[at] = dcell * g.f;
  }
}

// z = x w + h u, without the bias (the pointwise kernels add it).
template <class T>
DeviceBuffer<T> pre_activations(const CudaContext& ctx, const LstmShape& s, const T* x, const T* h, const T* w, const T* u) {
  DeviceBuffer<T> z(ctx, static_cast<std::size_t>(s.batch * 4 * s.hidden));
  gemm<T>(ctx, false, false, s.batch, 4 * s.hidden, s.input, x, w, z.data());
  gemm<T>(ctx, false, false, s.batch, 4 * s.hidden, s.hidden, h, u, z.data(), T(1));
  return z;
}

}  // namespace

template <class T>
void lstm_cell_forward(const CudaContext& ctx, const LstmShape& shape, const T* x, const T* h, const T* c, const T* w, const T* u,
                       const T* bias, T* h_next, T* c_next) {
  const std::int64_t n = shape.batch * shape.hidden;
  if (n == 0) return;
  const DeviceBuffer<T> z = pre_activations(ctx, shape, x, h, w, u);
  lstm_pointwise_forward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape.batch, shape.hidden, z.data(), bias, c, h_next, c_next);
  check_launch("lstm_pointwise_forward_kernel");
}

template <class T>
void lstm_cell_backward(const CudaContext& ctx, const LstmShape& shape, const T* x, const T* h, const T* c, const T* w, const T* u,
                        const T* bias, const T* c_next, const T* dh_next, const T* dc_next, T* dx, T* dh, T* dc, T* dw, T* du, T* dbias) {
  const std::int64_t n = shape.batch * shape.hidden, gates = 4 * shape.hidden;
  DeviceBuffer<T> dz = pre_activations(ctx, shape, x, h, w, u);
  // The kernel reads each element's four pre-activations before writing its four gradients over
  // them, and no other thread touches them: dz may share z's storage.
  if (n > 0) {
    lstm_pointwise_backward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape.batch, shape.hidden, dz.data(), bias, c, c_next, dh_next,
                                                                             dc_next, dz.data(), dc);
    check_launch("lstm_pointwise_backward_kernel");
  }
  if (dx) gemm<T>(ctx, false, true, shape.batch, shape.input, gates, dz.data(), w, dx);
  if (dh) gemm<T>(ctx, false, true, shape.batch, shape.hidden, gates, dz.data(), u, dh);
  if (dw) gemm<T>(ctx, true, false, shape.input, gates, shape.batch, x, dz.data(), dw);
  if (du) gemm<T>(ctx, true, false, shape.hidden, gates, shape.batch, h, dz.data(), du);
  if (dbias) column_sums<T>(ctx, shape.batch, gates, dz.data(), nullptr, dbias);
}

#define LOOM_INSTANTIATE(T)                                                                                                                \
  template void lstm_cell_forward<T>(const CudaContext&, const LstmShape&, const T*, const T*, const T*, const T*, const T*, const T*, T*, \
                                     T*);                                                                                                  \
  template void lstm_cell_backward<T>(const CudaContext&, const LstmShape&, const T*, const T*, const T*, const T*, const T*, const T*,    \
                                      const T*, const T*, const T*, T*, T*, T*, T*, T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)

}  // namespace loom::runtime::cuda

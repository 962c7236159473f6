#pragma once
// One LSTM step on device pointers, in float and double: z = x w + h u + bias with the gates
// (input, forget, cell, output) in blocks of `hidden` columns; c' = sigmoid(f) c + sigmoid(i)
// tanh(g) and h' = sigmoid(o) tanh(c'). The products run through cuBLAS, the gate math in Loom's
// own kernels.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

struct LstmShape {
  std::int64_t batch, input, hidden;  // x [batch, input], h and c [batch, hidden]
};

// w [input, 4 hidden], u [hidden, 4 hidden], bias [4 hidden].
template <class T>
void lstm_cell_forward(const CudaContext& ctx, const LstmShape& shape, const T* x, const T* h, const T* c, const T* w, const T* u,
                       const T* bias, T* h_next, T* c_next);

// The gradients of x, h, c, w, u and bias given those of h_next and c_next; c_next is the
// forward's output. A null gradient pointer is not computed.
template <class T>
void lstm_cell_backward(const CudaContext& ctx, const LstmShape& shape, const T* x, const T* h, const T* c, const T* w, const T* u,
                        const T* bias, const T* c_next, const T* dh_next, const T* dc_next, T* dx, T* dh, T* dc, T* dw, T* du, T* dbias);

}  // namespace loom::runtime::cuda

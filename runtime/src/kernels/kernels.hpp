#pragma once
// Registration of the native CPU kernels, one family per file.
#include "loom/runtime/kernel_registry.hpp"

namespace loom::runtime::kernels {

void add_matmul_kernels(KernelRegistry& r);         // matmul, matmul_relu, linear, batch_matmul, biases, transpose, ...
void add_elementwise_kernels(KernelRegistry& r);    // activations and elementwise arithmetic
void add_normalization_kernels(KernelRegistry& r);  // softmax, layer_norm, batchnorm
void add_conv_kernels(KernelRegistry& r);           // conv2d, grouped and depthwise
void add_pooling_kernels(KernelRegistry& r);        // max, average and global average pooling
void add_embedding_kernels(KernelRegistry& r);      // embedding, embedding_bag
void add_layout_kernels(KernelRegistry& r);         // concat, split, slices, reshapes, axis swaps
void add_lstm_kernels(KernelRegistry& r);           // lstm_cell
void add_attention_kernels(KernelRegistry& r);      // scores, causal mask, head projections, row lookup, dot attention
void add_window_kernels(KernelRegistry& r);         // Swin's window partition and reverse, cyclic shift, window mask
void add_pair_kernels(KernelRegistry& r);           // AlphaFold2's pair bias, outer product mean, triangle updates

// A kernel family registers itself for float and double through one template.
template <class T>
void add_cpu(KernelRegistry& r, const std::string& op, Kernel<T> kernel) {
  r.add<T>(op, Backend::Cpu, std::move(kernel));
}

}  // namespace loom::runtime::kernels

#pragma once
// The native CPU kernels, one family per file, each provided for what it computes; the kernel
// table names the operators they run.
#include "loom/runtime/kernel_table.hpp"

namespace loom::runtime::kernels {

void add_matmul_kernels(BackendKernels& k);         // matmul, matmul_relu, linear, batch_matmul, biases, transpose, ...
void add_elementwise_kernels(BackendKernels& k);    // activations and elementwise arithmetic
void add_normalization_kernels(BackendKernels& k);  // softmax, layer_norm, batchnorm
void add_conv_kernels(BackendKernels& k);           // conv2d, grouped and depthwise
void add_pooling_kernels(BackendKernels& k);        // max, average and global average pooling
void add_embedding_kernels(BackendKernels& k);      // embedding, embedding_bag
void add_layout_kernels(BackendKernels& k);         // concat, split, slices, reshapes, axis swaps
void add_lstm_kernels(BackendKernels& k);           // lstm_cell
void add_attention_kernels(BackendKernels& k);      // scores, causal mask, head projections, row lookup, dot attention
void add_window_kernels(BackendKernels& k);         // Swin's window partition and reverse, cyclic shift, window mask
void add_pair_kernels(BackendKernels& k);           // AlphaFold2's pair bias, outer product mean, triangle updates

}  // namespace loom::runtime::kernels

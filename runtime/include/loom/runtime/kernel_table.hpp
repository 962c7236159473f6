#pragma once
// The one list of operators that run on native kernels, and which kernel runs each. Every backend
// provides a kernel per NativeKernel and registers it from this table, so the backends cannot
// drift apart; an operator not listed runs through the interpreter.
#include <map>
#include <string_view>
#include <vector>

#include "loom/runtime/kernel_registry.hpp"

namespace loom::runtime {

enum class NativeKernel {
  // dense algebra
  Dense,
  DenseRelu,
  DenseBias,
  BatchMatmul,
  BiasAdd,
  BiasAddAxis,
  Transpose,
  // elementwise
  Relu,
  Sigmoid,
  Tanh,
  Gelu,
  Exp,
  Sqrt,
  Erf,
  Identity,
  Add,
  Sub,
  Mul,
  Div,
  ScalarMul,
  ScalarAdd,
  // normalizations
  Softmax,
  LayerNorm,
  BatchNorm,
  // convolutions and pooling
  Conv,
  ConvDepthwise,
  MaxPool,
  AvgPool,
  GlobalAvgPool,
  // layout: a relabel keeps the row-major order and takes its output dims from the call
  Relabel,
  Concat,
  Split,
  SliceAxis,
  SwapAxes,
  // lookups and sequences
  Lookup,
  GatherRows,
  LstmCell,
  AttentionScores,
  CausalMask,
  HeadProj,
  HeadProjNoBias,
  HeadMerge,
  AddRelativeBias,
  DotAttention,
  // Swin-Transformer's windows and AlphaFold2's pair representation
  WindowPartition,
  WindowReverse,
  CyclicShift,
  AddWindowMask,
  AddPairBias,
  OuterProductMean,
  TriangleMultOut,
  TriangleMultIn,
};

struct NativeKernelEntry {
  std::string_view op;
  NativeKernel kernel;
};

// Every operator with a native kernel, in the order they are registered.
const std::vector<NativeKernelEntry>& native_kernel_table();

// One backend's kernels, by what they compute, in float and double.
class BackendKernels {
 public:
  template <class T>
  void provide(NativeKernel which, Kernel<T> kernel) {
    kernels_.of<T>()[which] = with_host_form(std::move(kernel));
  }
  // Registers, for every entry of the table, this backend's kernel; throws LoomError naming the
  // operator when the backend lacks one, so a new entry cannot be forgotten by a backend.
  void register_all(KernelRegistry& registry, Backend backend) const;

 private:
  KernelMaps<NativeKernel> kernels_;
};

}  // namespace loom::runtime

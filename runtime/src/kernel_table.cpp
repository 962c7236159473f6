#include "loom/runtime/kernel_table.hpp"

#include <string>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {

const std::vector<NativeKernelEntry>& native_kernel_table() {
  using K = NativeKernel;
  static const std::vector<NativeKernelEntry> table = {
      {"matmul", K::Dense},
      {"linear_nobias", K::Dense},
      {"matmul_relu", K::DenseRelu},
      {"linear", K::DenseBias},
      {"batch_matmul", K::BatchMatmul},
      {"bias_add", K::BiasAdd},
      {"bias_add_axis", K::BiasAddAxis},
      {"transpose", K::Transpose},
      {"relu", K::Relu},
      {"sigmoid", K::Sigmoid},
      {"tanh", K::Tanh},
      {"gelu", K::Gelu},
      {"exp", K::Exp},
      {"sqrt", K::Sqrt},
      {"erf", K::Erf},
      {"identity", K::Identity},
      {"dropout", K::Identity},
      {"ewadd", K::Add},
      {"ewsub", K::Sub},
      {"ewmul", K::Mul},
      {"ewdiv", K::Div},
      {"scalar_mul", K::ScalarMul},
      {"scalar_add", K::ScalarAdd},
      {"softmax", K::Softmax},
      {"layer_norm", K::LayerNorm},
      {"batchnorm", K::BatchNorm},
      {"conv2d", K::Conv},
      {"conv2d_grouped", K::Conv},
      {"conv2d_depthwise", K::ConvDepthwise},
      {"pool2d_max", K::MaxPool},
      {"pool2d_avg", K::AvgPool},
      {"global_avg_pool", K::GlobalAvgPool},
      {"reshape", K::Relabel},
      {"reshape_4d", K::Relabel},
      {"flatten", K::Relabel},
      {"merge_axes", K::Relabel},
      {"split_axis", K::Relabel},
      {"squeeze_axis", K::Relabel},
      {"unsqueeze_axis", K::Relabel},
      {"concat", K::Concat},
      {"split", K::Split},
      {"slice_axis", K::SliceAxis},
      {"swap_axes", K::SwapAxes},
      {"embedding", K::Lookup},
      {"embedding_bag", K::Lookup},
      {"gather_rows", K::GatherRows},
      {"lstm_cell", K::LstmCell},
      {"attention_scores", K::AttentionScores},
      {"causal_mask", K::CausalMask},
      {"head_proj", K::HeadProj},
      {"head_proj_nobias", K::HeadProjNoBias},
      {"head_merge", K::HeadMerge},
      {"add_relative_bias", K::AddRelativeBias},
      {"dot_attention", K::DotAttention},
      {"window_partition", K::WindowPartition},
      {"window_reverse", K::WindowReverse},
      {"cyclic_shift", K::CyclicShift},
      {"add_window_mask", K::AddWindowMask},
      {"add_pair_bias", K::AddPairBias},
      {"outer_product_mean", K::OuterProductMean},
      {"triangle_mult_out", K::TriangleMultOut},
      {"triangle_mult_in", K::TriangleMultIn},
  };
  return table;
}

void BackendKernels::register_all(KernelRegistry& registry, Backend backend) const {
  const char* backend_name = backend == Backend::Cpu ? "CPU" : "CUDA";
  for (const NativeKernelEntry& entry : native_kernel_table()) {
    auto f = kernels_.of<float>().find(entry.kernel);
    auto d = kernels_.of<double>().find(entry.kernel);
    if (f == kernels_.of<float>().end() || d == kernels_.of<double>().end())
      throw LoomError(std::string("the ") + backend_name + " backend has no native kernel for operator '" + std::string(entry.op) +
                      "', which the native kernel table lists");
    registry.add<float>(std::string(entry.op), backend, f->second);
    registry.add<double>(std::string(entry.op), backend, d->second);
  }
}

}  // namespace loom::runtime

#include "loom/runtime/cuda/cuda_kernels.hpp"

#include <map>
#include <memory>

#include "kernel_adapter.hpp"
#include "loom/runtime/cuda/axis.hpp"
#include "loom/runtime/cuda/convolution.hpp"
#include "loom/runtime/cuda/elementwise.hpp"
#include "loom/runtime/cuda/gemm.hpp"
#include "loom/runtime/cuda/normalization.hpp"
#include "loom/runtime/relabel_kernel.hpp"

namespace loom::runtime {
namespace cuda_adapter {

const CudaContext& context() {
  thread_local std::map<int, std::unique_ptr<CudaContext>> contexts;
  int device = 0;
  cuda::check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  auto& slot = contexts[device];
  if (!slot) slot = std::make_unique<CudaContext>(device);
  return *slot;
}

namespace {

// matmul, linear_nobias, matmul_relu and linear: y = x w (+ bias) (relu), x's leading dimensions
// flattened into rows.
template <class T>
Kernel<T> dense_kernel(bool has_bias, bool relu) {
  Kernel<T> k;
  k.forward_values = [=](const ValueCall<T>& c) {
    const Value<T>& x = c.input(0);
    const Value<T>& w = c.input(1);
    const std::int64_t inner = w.dims().at(0), n = w.dims().at(1), rows = count(x) / inner;
    const auto &X = device_buffer(x), &W = device_buffer(w);
    auto Y = scratch<T>(static_cast<std::size_t>(rows * n));
    cuda::gemm<T>(context(), false, false, rows, n, inner, X.data(), W.data(), Y.data());
    if (has_bias) cuda::bias_add_forward<T>(context(), rows, n, Y.data(), in(c.input(2)), Y.data());
    if (relu) cuda::activation_forward<T>(context(), cuda::Activation::Relu, rows * n, Y.data());
    std::vector<std::int64_t> dims = x.dims();
    dims.back() = n;
    return Values<T>{hold(std::move(Y), dims)};
  };
  k.backward_values = [=](const ValueGradCall<T>& g) {
    const Value<T>& x = g.input(0);
    const Value<T>& w = g.input(1);
    const std::int64_t inner = w.dims().at(0), n = w.dims().at(1), rows = count(x) / inner;
    auto dZ = device_copy(g.grad(0));
    if (relu) cuda::activation_backward<T>(context(), cuda::Activation::Relu, rows * n, in(g.output(0)), dZ.data(), dZ.data());
    Values<T> grads(has_bias ? 3 : 2);
    if (g.wants(0)) {
      auto dX = scratch<T>(x.size());
      cuda::gemm<T>(context(), false, true, rows, inner, n, dZ.data(), in(w), dX.data());
      grads[0] = hold(std::move(dX), x.dims());
    }
    if (g.wants(1)) {
      auto dW = scratch<T>(w.size());
      cuda::gemm<T>(context(), true, false, inner, n, rows, in(x), dZ.data(), dW.data());
      grads[1] = hold(std::move(dW), w.dims());
    }
    if (has_bias && g.wants(2)) {
      auto dB = scratch<T>(static_cast<std::size_t>(n));
      cuda::column_sums<T>(context(), rows, n, dZ.data(), nullptr, dB.data());
      grads[2] = hold(std::move(dB), g.input(2).dims());
    }
    return grads;
  };
  return k;
}

// out[b] = x[b] y[b] over the flattened batch dimensions, as one strided batched GEMM.
template <class T>
Kernel<T> batch_matmul_kernel() {
  struct Shape {
    std::int64_t m, inner, n, batches;
  };
  auto shape_of = [](const Value<T>& x, const Value<T>& y) {
    const std::size_t r = x.rank();
    if (r < 2 || y.rank() != r) throw LoomError("batch_matmul: the CUDA kernel needs two inputs of the same rank, at least 2");
    Shape s{x.dims()[r - 2], x.dims()[r - 1], y.dims()[r - 1], 1};
    for (std::size_t i = 0; i + 2 < r; ++i) s.batches *= x.dims()[i];
    return s;
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const Shape s = shape_of(c.input(0), c.input(1));
    auto out = scratch<T>(static_cast<std::size_t>(s.batches * s.m * s.n));
    cuda::gemm_batched<T>(context(), false, false, s.m, s.n, s.inner, s.batches, in(c.input(0)), in(c.input(1)), out.data());
    std::vector<std::int64_t> dims = c.input(0).dims();
    dims.back() = s.n;
    return Values<T>{hold(std::move(out), dims)};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const Shape s = shape_of(g.input(0), g.input(1));
    const auto& dO = device_buffer(g.grad(0));
    Values<T> grads(2);
    if (g.wants(0)) {
      auto dX = scratch<T>(g.input(0).size());
      cuda::gemm_batched<T>(context(), false, true, s.m, s.inner, s.n, s.batches, dO.data(), in(g.input(1)), dX.data());
      grads[0] = hold(std::move(dX), g.input(0).dims());
    }
    if (g.wants(1)) {
      auto dY = scratch<T>(g.input(1).size());
      cuda::gemm_batched<T>(context(), true, false, s.inner, s.n, s.m, s.batches, in(g.input(0)), dO.data(), dY.data());
      grads[1] = hold(std::move(dY), g.input(1).dims());
    }
    return grads;
  };
  return k;
}

template <class T>
Kernel<T> bias_add_kernel() {
  Kernel<T> k;
  k.forward_values = [](const ValueCall<T>& c) {
    const Value<T>& x = c.input(0);
    auto Y = device_copy(x);
    cuda::bias_add_forward<T>(context(), leading_rows(x.dims()), last_dim(x.dims()), Y.data(), in(c.input(1)), Y.data());
    return Values<T>{hold(std::move(Y), x.dims())};
  };
  k.backward_values = [](const ValueGradCall<T>& g) {
    const Value<T>& dy = g.grad(0);
    auto dB = scratch<T>(g.input(1).size());
    cuda::column_sums<T>(context(), leading_rows(dy.dims()), last_dim(dy.dims()), in(dy), nullptr, dB.data());
    return Values<T>{dy, hold(std::move(dB), g.input(1).dims())};
  };
  return k;
}

// x + bias along `axis` (a convolution's bias: axis 1 of NCHW); the bias's gradient sums dy over
// every other dimension. A piece split along the axis comes with the bias split alike, so pieces
// need nothing of their logical position.
template <class T>
Kernel<T> bias_add_axis_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    const std::size_t axis = axis_of(c);
    const std::vector<std::int64_t>& x = c.input(0).dims();
    require_rank(c, 1, 1);
    if (c.input(1).dims()[0] != x[axis])
      throw LoomError(c.op + ": the bias has " + std::to_string(c.input(1).dims()[0]) + " entries, axis " + std::to_string(axis) +
                      " of the input " + std::to_string(x[axis]));
    return cuda::AxisShape{product(x, 0, axis), x[axis], product(x, axis + 1, x.size())};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::AxisShape s = shape_of(c);
    auto Y = device_copy(c.input(0));
    cuda::axis_bias_forward<T>(context(), s, Y.data(), in(c.input(1)), Y.data());
    return Values<T>{hold(std::move(Y), c.input(0).dims())};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const cuda::AxisShape s = shape_of(g.call);
    Values<T> grads(2);
    if (g.wants(0)) grads[0] = g.grad(0);
    if (g.wants(1)) {
      auto dB = scratch<T>(g.input(1).size());
      cuda::axis_sums<T>(context(), s, in(g.grad(0)), dB.data());
      grads[1] = hold(std::move(dB), g.input(1).dims());
    }
    return grads;
  };
  return k;
}

template <class T>
Kernel<T> unary_kernel(cuda::Unary f) {
  Kernel<T> k;
  k.forward_values = [f](const ValueCall<T>& c) {
    const Value<T>& x = c.input(0);
    auto Y = scratch<T>(x.size());
    cuda::unary_forward<T>(context(), f, count(x), in(x), Y.data());
    return Values<T>{hold(std::move(Y), x.dims())};
  };
  k.backward_values = [f](const ValueGradCall<T>& g) {
    const Value<T>& x = g.input(0);
    auto dX = scratch<T>(x.size());
    cuda::unary_backward<T>(context(), f, count(x), in(x), in(g.output(0)), in(g.grad(0)), dX.data());
    return Values<T>{hold(std::move(dX), x.dims())};
  };
  return k;
}

template <class T>
Kernel<T> binary_kernel(cuda::Arith op) {
  Kernel<T> k;
  k.forward_values = [op](const ValueCall<T>& c) {
    const Value<T>& a = c.input(0);
    if (c.input(1).dims() != a.dims()) throw LoomError(c.op + ": the CUDA kernel needs both inputs of the same shape");
    auto Y = scratch<T>(a.size());
    cuda::binary_forward<T>(context(), op, count(a), in(a), in(c.input(1)), Y.data());
    return Values<T>{hold(std::move(Y), a.dims())};
  };
  k.backward_values = [op](const ValueGradCall<T>& g) {
    const Value<T>& a = g.input(0);
    auto dA = scratch<T>(a.size());
    auto dB = scratch<T>(a.size());
    cuda::binary_backward<T>(context(), op, count(a), in(a), in(g.input(1)), in(g.grad(0)), dA.data(), dB.data());
    return Values<T>{hold(std::move(dA), a.dims()), hold(std::move(dB), g.input(1).dims())};
  };
  return k;
}

// x op s with s a rank-0 tensor; s's gradient is a sum over every element.
template <class T>
Kernel<T> scalar_kernel(cuda::Arith op) {
  Kernel<T> k;
  k.forward_values = [op](const ValueCall<T>& c) {
    const Value<T>& x = c.input(0);
    if (c.input(1).size() != 1) throw LoomError(c.op + ": the scalar input must hold one value");
    auto Y = scratch<T>(x.size());
    cuda::scalar_forward<T>(context(), op, count(x), in(x), in(c.input(1)), Y.data());
    return Values<T>{hold(std::move(Y), x.dims())};
  };
  k.backward_values = [op](const ValueGradCall<T>& g) {
    const Value<T>& x = g.input(0);
    const auto &dY = device_buffer(g.grad(0)), &X = device_buffer(x);
    auto dX = scratch<T>(x.size());
    auto dS = scratch<T>(1);
    cuda::scalar_backward<T>(context(), op, count(x), in(g.input(1)), dY.data(), dX.data());
    cuda::sum_all<T>(context(), count(x), dY.data(), op == cuda::Arith::Mul ? X.data() : nullptr, dS.data());
    return Values<T>{hold(std::move(dX), x.dims()), hold(std::move(dS), g.input(1).dims())};
  };
  return k;
}

template <class T>
Kernel<T> softmax_kernel() {
  Kernel<T> k;
  k.forward_values = [](const ValueCall<T>& c) {
    const Value<T>& x = c.input(0);
    auto Y = scratch<T>(x.size());
    cuda::softmax_forward<T>(context(), leading_rows(x.dims()), last_dim(x.dims()), in(x), Y.data());
    return Values<T>{hold(std::move(Y), x.dims())};
  };
  k.backward_values = [](const ValueGradCall<T>& g) {
    const Value<T>& y = g.output(0);
    auto dX = scratch<T>(y.size());
    cuda::softmax_backward<T>(context(), leading_rows(y.dims()), last_dim(y.dims()), in(y), in(g.grad(0)), dX.data());
    return Values<T>{hold(std::move(dX), y.dims())};
  };
  return k;
}

template <class T>
Kernel<T> layer_norm_kernel() {
  Kernel<T> k;
  k.forward_values = [](const ValueCall<T>& c) {
    const Value<T>& x = c.input(0);
    auto Y = scratch<T>(x.size());
    cuda::layer_norm_forward<T>(context(), leading_rows(x.dims()), last_dim(x.dims()), in(x), in(c.input(1)), in(c.input(2)), Y.data());
    return Values<T>{hold(std::move(Y), x.dims())};
  };
  k.backward_values = [](const ValueGradCall<T>& g) {
    const Value<T>& x = g.input(0);
    const std::int64_t n = last_dim(x.dims());
    auto dX = scratch<T>(x.size());
    auto dGamma = scratch<T>(static_cast<std::size_t>(n));
    auto dBeta = scratch<T>(static_cast<std::size_t>(n));
    cuda::layer_norm_backward<T>(context(), leading_rows(x.dims()), n, in(x), in(g.input(1)), in(g.grad(0)), dX.data(), dGamma.data(),
                                 dBeta.data());
    return Values<T>{hold(std::move(dX), x.dims()), hold(std::move(dGamma), g.input(1).dims()), hold(std::move(dBeta), g.input(2).dims())};
  };
  return k;
}

// batchnorm(x [n, c, h, w], scale, bias, mean, var) with the given statistics.
template <class T>
Kernel<T> batchnorm_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_rank(c, 0, 4);
    const auto& d = c.input(0).dims();
    return cuda::BatchNormShape{d[0], d[1], d[2] * d[3]};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const Value<T>& x = c.input(0);
    auto Y = scratch<T>(x.size());
    cuda::batchnorm_forward<T>(context(), shape_of(c), in(x), in(c.input(1)), in(c.input(2)), in(c.input(3)), in(c.input(4)), Y.data());
    return Values<T>{hold(std::move(Y), x.dims())};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const Value<T>& x = g.input(0);
    std::vector<DeviceBuffer<T>> d;
    d.push_back(scratch<T>(x.size()));
    for (std::size_t i = 1; i < 5; ++i) d.push_back(scratch<T>(g.input(i).size()));
    cuda::batchnorm_backward<T>(context(), shape_of(g.call), in(x), in(g.input(1)), in(g.input(3)), in(g.input(4)), in(g.grad(0)),
                                d[0].data(), d[1].data(), d[2].data(), d[3].data(), d[4].data());
    Values<T> grads;
    for (std::size_t i = 0; i < 5; ++i) grads.push_back(hold(std::move(d[i]), g.input(i).dims()));
    return grads;
  };
  return k;
}

// conv2d, conv2d_grouped and conv2d_depthwise (one group per channel), with the fused activation.
template <class T>
Kernel<T> conv_kernel(bool depthwise) {
  auto shape_of = [depthwise](const ValueCall<T>& c) {
    require_rank(c, 0, 4);
    require_rank(c, 1, 4);
    const auto& x = c.input(0).dims();
    const auto& w = c.input(1).dims();
    const std::int64_t groups = depthwise ? x[1] : c.attrs.count("groups") ? c.attr("groups") : 1;
    if (groups <= 0 || x[1] % groups != 0 || w[0] % groups != 0 || w[1] * groups != x[1])
      throw LoomError(c.op + ": weight [" + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", ...] does not fit " +
                      std::to_string(x[1]) + " input channels in " + std::to_string(groups) + " groups");
    return cuda::ConvShape{
        x[0], x[1], x[2], x[3], w[0], w[2], w[3], groups, c.attr("stride_h"), c.attr("stride_w"), c.attr("pad_h"), c.attr("pad_w")};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::ConvShape s = shape_of(c);
    const auto act = static_cast<cuda::Activation>(c.attr("act"));
    auto Y = scratch<T>(static_cast<std::size_t>(s.batch * s.filters * s.out_h() * s.out_w()));
    cuda::conv2d_forward<T>(context(), s, in(c.input(0)), in(c.input(1)), Y.data());
    cuda::activation_forward<T>(context(), act, static_cast<std::int64_t>(Y.size()), Y.data());
    return Values<T>{hold(std::move(Y), {s.batch, s.filters, s.out_h(), s.out_w()})};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const cuda::ConvShape s = shape_of(g.call);
    const auto act = static_cast<cuda::Activation>(g.call.attr("act"));
    auto dZ = device_copy(g.grad(0));
    cuda::activation_backward<T>(context(), act, static_cast<std::int64_t>(dZ.size()), in(g.output(0)), dZ.data(), dZ.data());
    Values<T> grads{zeros<T>(g.input(0).dims()), zeros<T>(g.input(1).dims())};
    if (g.wants(0)) {
      auto dX = scratch<T>(g.input(0).size());
      cuda::conv2d_backward_data<T>(context(), s, in(g.input(1)), dZ.data(), dX.data());
      grads[0] = hold(std::move(dX), g.input(0).dims());
    }
    if (g.wants(1)) {
      auto dW = scratch<T>(g.input(1).size());
      cuda::conv2d_backward_filter<T>(context(), s, in(g.input(0)), dZ.data(), dW.data());
      grads[1] = hold(std::move(dW), g.input(1).dims());
    }
    return grads;
  };
  return k;
}

// pool2d_max, pool2d_avg (windows from the attributes) and global_avg_pool (one window per plane).
template <class T>
Kernel<T> pool_kernel(cuda::Pooling mode, bool global) {
  auto shape_of = [global](const ValueCall<T>& c) {
    require_rank(c, 0, 4);
    const auto& d = c.input(0).dims();
    if (global) return cuda::PoolShape{d[0], d[1], d[2], d[3], d[2], d[3], 1, 1, 0, 0};
    const std::int64_t stride = c.attr("stride"), pad = c.attr("pad");
    return cuda::PoolShape{d[0], d[1], d[2], d[3], c.attr("kh"), c.attr("kw"), stride, stride, pad, pad};
  };
  Kernel<T> k;
  k.forward_values = [mode, shape_of](const ValueCall<T>& c) {
    const cuda::PoolShape s = shape_of(c);
    auto Y = scratch<T>(static_cast<std::size_t>(s.batch * s.channels * s.out_h() * s.out_w()));
    cuda::pool2d_forward<T>(context(), mode, s, in(c.input(0)), Y.data());
    return Values<T>{hold(std::move(Y), {s.batch, s.channels, s.out_h(), s.out_w()})};
  };
  k.backward_values = [mode, shape_of](const ValueGradCall<T>& g) {
    const cuda::PoolShape s = shape_of(g.call);
    auto dX = scratch<T>(g.input(0).size());
    cuda::pool2d_backward<T>(context(), mode, s, in(g.input(0)), in(g.output(0)), in(g.grad(0)), dX.data());
    return Values<T>{hold(std::move(dX), g.input(0).dims())};
  };
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
  using cuda::Unary;
  k.provide<T>(NativeKernel::Relu, unary_kernel<T>(Unary::Relu));
  k.provide<T>(NativeKernel::Sigmoid, unary_kernel<T>(Unary::Sigmoid));
  k.provide<T>(NativeKernel::Tanh, unary_kernel<T>(Unary::Tanh));
  k.provide<T>(NativeKernel::Gelu, unary_kernel<T>(Unary::Gelu));
  k.provide<T>(NativeKernel::Exp, unary_kernel<T>(Unary::Exp));
  k.provide<T>(NativeKernel::Sqrt, unary_kernel<T>(Unary::Sqrt));
  k.provide<T>(NativeKernel::Erf, unary_kernel<T>(Unary::Erf));
  k.provide<T>(NativeKernel::Identity, unary_kernel<T>(Unary::Identity));
  using cuda::Arith;
  k.provide<T>(NativeKernel::Add, binary_kernel<T>(Arith::Add));
  k.provide<T>(NativeKernel::Sub, binary_kernel<T>(Arith::Sub));
  k.provide<T>(NativeKernel::Mul, binary_kernel<T>(Arith::Mul));
  k.provide<T>(NativeKernel::Div, binary_kernel<T>(Arith::Div));
  k.provide<T>(NativeKernel::ScalarMul, scalar_kernel<T>(Arith::Mul));
  k.provide<T>(NativeKernel::ScalarAdd, scalar_kernel<T>(Arith::Add));
  k.provide<T>(NativeKernel::Softmax, softmax_kernel<T>());
  k.provide<T>(NativeKernel::LayerNorm, layer_norm_kernel<T>());
  k.provide<T>(NativeKernel::BatchNorm, batchnorm_kernel<T>());
  k.provide<T>(NativeKernel::Conv, conv_kernel<T>(false));
  k.provide<T>(NativeKernel::ConvDepthwise, conv_kernel<T>(true));
  k.provide<T>(NativeKernel::MaxPool, pool_kernel<T>(cuda::Pooling::Max, false));
  k.provide<T>(NativeKernel::AvgPool, pool_kernel<T>(cuda::Pooling::Average, false));
  k.provide<T>(NativeKernel::GlobalAvgPool, pool_kernel<T>(cuda::Pooling::Average, true));
}

}  // namespace
}  // namespace cuda_adapter

void add_cuda_kernels(KernelRegistry& registry) {
  BackendKernels k;
  cuda_adapter::add_all<float>(k);
  cuda_adapter::add_all<double>(k);
  cuda_adapter::add_layout_kernels(k);
  cuda_adapter::add_sequence_kernels(k);
  cuda_adapter::add_model_kernels(k);
  k.provide<float>(NativeKernel::Relabel, relabel_kernel<float>());
  k.provide<double>(NativeKernel::Relabel, relabel_kernel<double>());
  k.register_all(registry, Backend::Cuda);
}

std::optional<std::string> cuda_unavailable_reason() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess)
    return std::string("no CUDA device: cudaGetDeviceCount returned ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  if (devices == 0) return std::string("no CUDA device: cudaGetDeviceCount found 0 devices");
  cudaDeviceProp props{};
  if (const cudaError_t e = cudaGetDeviceProperties(&props, 0); e != cudaSuccess)
    return std::string("CUDA device 0 unusable: cudaGetDeviceProperties returned ") + cudaGetErrorName(e);
  // The build carries sm_90 code and compute_90 PTX, which runs on compute capability 9.0 and up.
  if (props.major < 9)
    return std::string("CUDA device 0 (") + props.name + ") has compute capability " + std::to_string(props.major) + "." +
           std::to_string(props.minor) + "; this build targets 9.0 (H100/H200) and later";
  return std::nullopt;
}

int visible_cuda_devices() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess ? devices : 0;
}

void use_cuda_device(int device) { cuda::check_cuda(cudaSetDevice(device), "cudaSetDevice"); }

}  // namespace loom::runtime

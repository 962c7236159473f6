// One training iteration of Unity's MLP on one GPU, fully device-resident: 16 dense layers of
// 8192 with ReLU, batch 256, float, no bias, mean-squared-error loss, plain SGD. Forward, backward
// and update are cuBLAS SGEMMs plus small elementwise kernels on one stream, timed with CUDA
// events over warm iterations. The same GEMMs are then timed alone, and the MLP's matmul
// throughput is printed as a percentage of theirs.
//
//   loom_cuda_mlp_bench [--layers N] [--width N] [--batch N] [--warmup N] [--iters N] [--tf32]
//                       [--unfused-sgd]
//
// By default the SGD update is fused into the weight-gradient GEMM (W += -lr X^T dZ, beta = 1);
// --unfused-sgd computes the gradient into a buffer and updates W with a separate kernel, as
// PyTorch's optimizer does. --tf32 lets cuBLAS use TF32 tensor cores (default: full FP32).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

struct Options {
  int layers = 16, width = 8192, batch = 256, warmup = 3, iters = 10;
  bool tf32 = false, fused_sgd = true;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto number = [&](int& into) {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      into = std::atoi(argv[++i]);
      if (into <= 0) throw std::runtime_error(a + " needs a positive value");
    };
    if (a == "--layers")
      number(o.layers);
    else if (a == "--width")
      number(o.width);
    else if (a == "--batch")
      number(o.batch);
    else if (a == "--warmup")
      number(o.warmup);
    else if (a == "--iters")
      number(o.iters);
    else if (a == "--tf32")
      o.tf32 = true;
    else if (a == "--unfused-sgd")
      o.fused_sgd = false;
    else
      throw std::runtime_error("unknown option '" + a + "'");
  }
  return o;
}

// Uniform values in [-scale, scale) from a hash of the index: reproducible, no cuRAND needed.
__global__ void fill_uniform(std::size_t n, float scale, std::uint32_t seed, float* out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    out[i] = scale * (2.0f * (h * (1.0f / 4294967296.0f)) - 1.0f);
  }
}

__global__ void relu_inplace(std::size_t n, float* y) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x)
    y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

// dZ = dY relu'(y), in place on dY.
__global__ void relu_backward_inplace(std::size_t n, const float* y, float* dy) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x)
    if (y[i] <= 0.0f) dy[i] = 0.0f;
}

// Gradient of the mean squared error: dY = 2 (y - target) / n.
__global__ void mse_gradient(std::size_t n, const float* y, const float* target, float* dy) {
  const float scale = 2.0f / static_cast<float>(n);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x)
    dy[i] = scale * (y[i] - target[i]);
}

__global__ void sgd_update(std::size_t n, float lr, const float* grad, float* w) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x)
    w[i] -= lr * grad[i];
}

constexpr int kThreads = 256;
unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 8192 ? (b ? b : 1) : 8192);
}

float* device_floats(std::size_t n) {
  void* p = nullptr;
  check(cudaMalloc(&p, n * sizeof(float)), "cudaMalloc");
  return static_cast<float*>(p);
}

// Row-major products, as column-major cuBLAS calls on the transposes (B X = (X^T B^T)^T).
struct Gemms {
  cublasHandle_t handle;
  int batch, width;

  // out[batch, width] = x[batch, width] w[width, width]
  void forward(const float* x, const float* w, float* out) const {
    const float one = 1, zero = 0;
    check(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, width, batch, width, &one, w, width, x, width, &zero, out, width),
          "cublasSgemm forward");
  }
  // dx[batch, width] = dz[batch, width] w^T
  void input_grad(const float* dz, const float* w, float* dx) const {
    const float one = 1, zero = 0;
    check(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, width, batch, width, &one, w, width, dz, width, &zero, dx, width),
          "cublasSgemm input gradient");
  }
  // out[width, width] = alpha x^T dz + beta out
  void weight_grad(const float* x, const float* dz, float alpha, float beta, float* out) const {
    check(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, width, width, batch, &alpha, dz, width, x, width, &beta, out, width),
          "cublasSgemm weight gradient");
  }
};

struct Mlp {
  Options o;
  Gemms gemm;
  cudaStream_t stream;
  std::vector<float*> weights, activations;  // activations[0] is the input
  float *target = nullptr, *grad = nullptr, *grad_in = nullptr, *weight_grad = nullptr;
  float lr = 1e-3f;

  std::size_t act_size() const { return std::size_t(o.batch) * o.width; }
  std::size_t weight_size() const { return std::size_t(o.width) * o.width; }

  void iteration() {
    const std::size_t n = act_size();
    for (int l = 0; l < o.layers; ++l) {
      gemm.forward(activations[l], weights[l], activations[l + 1]);
      relu_inplace<<<blocks_for(n), kThreads, 0, stream>>>(n, activations[l + 1]);
    }
    mse_gradient<<<blocks_for(n), kThreads, 0, stream>>>(n, activations[o.layers], target, grad);
    for (int l = o.layers - 1; l >= 0; --l) {
      relu_backward_inplace<<<blocks_for(n), kThreads, 0, stream>>>(n, activations[l + 1], grad);
      if (l > 0) gemm.input_grad(grad, weights[l], grad_in);  // before W changes
      if (o.fused_sgd) {
        gemm.weight_grad(activations[l], grad, -lr, 1.0f, weights[l]);
      } else {
        gemm.weight_grad(activations[l], grad, 1.0f, 0.0f, weight_grad);
        sgd_update<<<blocks_for(weight_size()), kThreads, 0, stream>>>(weight_size(), lr, weight_grad, weights[l]);
      }
      std::swap(grad, grad_in);
    }
    check(cudaGetLastError(), "kernel launch");
  }
};

// Milliseconds per call of `run`, over `iters` calls after `warmup` calls.
template <class F>
float time_ms(cudaStream_t stream, int warmup, int iters, F run) {
  for (int i = 0; i < warmup; ++i) run();
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) run();
  check(cudaEventRecord(stop, stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / static_cast<float>(iters);
}

int run(const Options& o) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("loom_cuda_mlp_bench: skipped: no CUDA device: cudaGetDeviceCount %s\n",
                status != cudaSuccess
                    ? (std::string("returned ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")").c_str()
                    : "found 0 devices");
    return 0;
  }
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, 0), "cudaGetDeviceProperties");
  check(cudaSetDevice(0), "cudaSetDevice");

  Mlp m{o, {}, nullptr, {}, {}};
  check(cudaStreamCreate(&m.stream), "cudaStreamCreate");
  check(cublasCreate(&m.gemm.handle), "cublasCreate");
  check(cublasSetStream(m.gemm.handle, m.stream), "cublasSetStream");
  check(cublasSetMathMode(m.gemm.handle, o.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  m.gemm.batch = o.batch;
  m.gemm.width = o.width;

  const float weight_scale = std::sqrt(6.0f / static_cast<float>(o.width));  // He-uniform for ReLU
  for (int l = 0; l < o.layers; ++l) {
    m.weights.push_back(device_floats(m.weight_size()));
    fill_uniform<<<blocks_for(m.weight_size()), kThreads, 0, m.stream>>>(m.weight_size(), weight_scale, 17u + l, m.weights[l]);
  }
  for (int l = 0; l <= o.layers; ++l) m.activations.push_back(device_floats(m.act_size()));
  fill_uniform<<<blocks_for(m.act_size()), kThreads, 0, m.stream>>>(m.act_size(), 1.0f, 1u, m.activations[0]);
  m.target = device_floats(m.act_size());
  fill_uniform<<<blocks_for(m.act_size()), kThreads, 0, m.stream>>>(m.act_size(), 1.0f, 2u, m.target);
  m.grad = device_floats(m.act_size());
  m.grad_in = device_floats(m.act_size());
  if (!o.fused_sgd) m.weight_grad = device_floats(m.weight_size());
  check(cudaGetLastError(), "fill_uniform");

  const double gemm_flops = 2.0 * o.batch * double(o.width) * o.width;
  const double iteration_flops = gemm_flops * (3.0 * o.layers - 1);  // forward, weight and input gradients (not layer 0's)
  const float iteration_ms = time_ms(m.stream, o.warmup, o.iters, [&] { m.iteration(); });

  // The same GEMMs alone, on the same buffers.
  const int reps = 20;
  const float forward_ms = time_ms(m.stream, 2, reps, [&] { m.gemm.forward(m.activations[0], m.weights[0], m.activations[1]); });
  const float input_ms = time_ms(m.stream, 2, reps, [&] { m.gemm.input_grad(m.grad, m.weights[0], m.grad_in); });
  float* scratch = o.fused_sgd ? device_floats(m.weight_size()) : m.weight_grad;
  const float weight_ms = time_ms(m.stream, 2, reps, [&] { m.gemm.weight_grad(m.activations[0], m.grad, 1.0f, 0.0f, scratch); });
  const double plain_ms = o.layers * (forward_ms + weight_ms) + (o.layers - 1) * input_ms;
  auto tflops = [](double flops, double ms) { return flops / (ms * 1e-3) / 1e12; };

  std::printf("device: %s (compute capability %d.%d)\n", props.name, props.major, props.minor);
  std::printf("MLP: %d dense layers of %d, batch %d, float32, ReLU, MSE loss, SGD (%s), cuBLAS math: %s\n", o.layers, o.width, o.batch,
              o.fused_sgd ? "fused into the weight-gradient GEMM" : "separate update kernel", o.tf32 ? "TF32 tensor cores" : "FP32");
  std::printf("training iteration: %.3f ms/iteration, %.1f TFLOP/s (%.3f TFLOP per iteration, %d warm iterations timed)\n", iteration_ms,
              tflops(iteration_flops, iteration_ms), iteration_flops / 1e12, o.iters);
  std::printf(
      "plain SGEMM, same shapes: forward %.3f ms (%.1f TFLOP/s), input gradient %.3f ms (%.1f TFLOP/s), "
      "weight gradient %.3f ms (%.1f TFLOP/s)\n",
      forward_ms, tflops(gemm_flops, forward_ms), input_ms, tflops(gemm_flops, input_ms), weight_ms, tflops(gemm_flops, weight_ms));
  std::printf("MLP matmul throughput: %.1f%% of plain SGEMM (%.3f ms of GEMMs alone per iteration)\n", 100.0 * plain_ms / iteration_ms,
              plain_ms);

  if (o.fused_sgd) cudaFree(scratch);
  for (float* p : m.weights) cudaFree(p);
  for (float* p : m.activations) cudaFree(p);
  cudaFree(m.target);
  cudaFree(m.grad);
  cudaFree(m.grad_in);
  if (m.weight_grad) cudaFree(m.weight_grad);
  cublasDestroy(m.gemm.handle);
  cudaStreamDestroy(m.stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom_cuda_mlp_bench: %s\n", e.what());
    return 1;
  }
}

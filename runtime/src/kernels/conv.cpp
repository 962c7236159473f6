// 2-D convolution (NCHW), plain, grouped and depthwise, as one grouped convolution: per sample
// and group, the input window is unfolded (im2col) and multiplied by the group's filters with
// Eigen's GEMM; the fused activation is applied to the result. A weight piece split along its
// kernel rows or columns holds rows [r0, r0 + kh) and columns [s0, s0 + kw) of the logical kernel:
// its output is the partial sum over them, sized by the logical kernel.
#include <cmath>

#include "eigen_views.hpp"
#include "kernels.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

enum class Act { None = 0, Relu = 1, Sigmoid = 2, Tanh = 3 };

struct ConvGeometry {
  std::int64_t batch, channels, height, width;   // input
  std::int64_t filters, group_channels, kh, kw;  // weight [filters, group_channels, kh, kw]
  std::int64_t groups, stride_h, stride_w, pad_h, pad_w;
  std::int64_t out_h, out_w;
  std::int64_t r0 = 0, s0 = 0;  // the piece's first kernel row and column

  std::int64_t patch() const { return group_channels * kh * kw; }
  std::int64_t group_filters() const { return filters / groups; }
  std::int64_t out_plane() const { return out_h * out_w; }
};

// `depthwise`: one group per channel; otherwise the `groups` attribute when the op has one.
template <class T>
ConvGeometry geometry(const OpCall<T>& c, bool depthwise) {
  const auto& x = c.input(0).dims;
  const auto& w = c.input(1).dims;
  ConvGeometry g{
      x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3], 1, c.attr("stride_h"), c.attr("stride_w"), c.attr("pad_h"), c.attr("pad_w"), 0, 0};
  g.groups = depthwise ? x[1] : c.attrs.count("groups") ? c.attr("groups") : 1;
  g.out_h = (g.height + 2 * g.pad_h - c.logical_size(1, 2)) / g.stride_h + 1;
  g.out_w = (g.width + 2 * g.pad_w - c.logical_size(1, 3)) / g.stride_w + 1;
  g.r0 = c.offset(1, 2);
  g.s0 = c.offset(1, 3);
  return g;
}

// Calls visit(patch_row, out_position, input_offset) for every in-range input element of the
// unfolded window of sample b, group grp.
template <class Visit>
void for_each_window_element(const ConvGeometry& g, std::int64_t b, std::int64_t grp, Visit&& visit) {
  for (std::int64_t q = 0; q < g.group_channels; ++q) {
    const std::int64_t channel_base = ((b * g.channels) + grp * g.group_channels + q) * g.height;
    for (std::int64_t r = 0; r < g.kh; ++r)
      for (std::int64_t s = 0; s < g.kw; ++s) {
        const std::int64_t row = (q * g.kh + r) * g.kw + s;
        for (std::int64_t i = 0; i < g.out_h; ++i) {
          const std::int64_t y = i * g.stride_h + g.r0 + r - g.pad_h;
          if (y < 0 || y >= g.height) continue;
          for (std::int64_t j = 0; j < g.out_w; ++j) {
            const std::int64_t xw = j * g.stride_w + g.s0 + s - g.pad_w;
            if (xw < 0 || xw >= g.width) continue;
            visit(row, i * g.out_w + j, (channel_base + y) * g.width + xw);
          }
        }
      }
  }
}

template <class T>
void unfold(const ConvGeometry& g, const Tensor<T>& x, std::int64_t b, std::int64_t grp, RowMatrix<T>& col) {
  col.setZero(as_index(g.patch()), as_index(g.out_plane()));
  for_each_window_element(g, b, grp, [&](std::int64_t row, std::int64_t pos, std::int64_t at) {
    col(as_index(row), as_index(pos)) = x.data[static_cast<std::size_t>(at)];
  });
}

template <class T>
Kernel<T> conv_kernel(bool depthwise) {
  Kernel<T> k;
  k.forward = [depthwise](const OpCall<T>& c) {
    const ConvGeometry g = geometry(c, depthwise);
    const auto act = static_cast<Act>(c.attr("act"));
    Tensor<T> y({g.batch, g.filters, g.out_h, g.out_w});
    RowMatrix<T> col;
    for (std::int64_t b = 0; b < g.batch; ++b)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        unfold(g, c.input(0), b, grp, col);
        matrix(y, g.group_filters(), g.out_plane(), (b * g.filters + grp * g.group_filters()) * g.out_plane()).noalias() =
            matrix(c.input(1), g.group_filters(), g.patch(), grp * g.group_filters() * g.patch()) * col;
      }
    auto Y = array(y);
    switch (act) {
      case Act::None: break;
      case Act::Relu: Y = Y.max(T(0)); break;
      case Act::Sigmoid: Y = T(1) / (T(1) + (-Y).exp()); break;
      case Act::Tanh: Y = Y.tanh(); break;
    }
    return Tensors<T>{std::move(y)};
  };
  k.backward = [depthwise](const GradCall<T>& gc) {
    const ConvGeometry g = geometry(gc.call, depthwise);
    const auto act = static_cast<Act>(gc.call.attr("act"));
    Tensor<T> dz = gc.grad(0);
    auto Y = array(gc.output(0));
    switch (act) {
      case Act::None: break;
      case Act::Relu: array(dz) = (Y > T(0)).select(array(dz), T(0)); break;
      case Act::Sigmoid: array(dz) *= Y * (T(1) - Y); break;
      case Act::Tanh: array(dz) *= T(1) - Y * Y; break;
    }
    Tensors<T> grads{Tensor<T>(gc.input(0).dims, T(0)), Tensor<T>(gc.input(1).dims, T(0))};
    RowMatrix<T> col, dcol;
    for (std::int64_t b = 0; b < g.batch; ++b)
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        auto dZ = matrix(dz, g.group_filters(), g.out_plane(), (b * g.filters + grp * g.group_filters()) * g.out_plane());
        const std::int64_t w_at = grp * g.group_filters() * g.patch();
        if (gc.wants(1)) {
          unfold(g, gc.input(0), b, grp, col);
          matrix(grads[1], g.group_filters(), g.patch(), w_at).noalias() += dZ * col.transpose();
        }
        if (gc.wants(0)) {
          dcol.noalias() = matrix(gc.input(1), g.group_filters(), g.patch(), w_at).transpose() * dZ;
          for_each_window_element(g, b, grp, [&](std::int64_t row, std::int64_t pos, std::int64_t at) {
            grads[0].data[static_cast<std::size_t>(at)] += dcol(as_index(row), as_index(pos));
          });
        }
      }
    return grads;
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::Conv, conv_kernel<T>(false));
  k.provide<T>(NativeKernel::ConvDepthwise, conv_kernel<T>(true));
}

}  // namespace

void add_conv_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

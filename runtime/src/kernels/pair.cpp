// AlphaFold2's pair representation: the pair bias of row attention, the outer product mean and the
// triangle multiplicative updates. The contractions are batched matrix products: the outer product
// mean is one GEMM per batch over the sequences, and the triangle updates one GEMM per batch and
// channel once the channels are moved first. The mean divides by the logical sequence count, so a
// piece of the sequences gives its partial sum; nothing else reads sizes or positions.
#include <algorithm>

#include "eigen_views.hpp"
#include "kernels.hpp"
#include "loom/runtime/piece_checks.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

// x [n, m, h, t, u] plus bias [n, t, u, h]: bias[b, r, c, a] is added to x[b, .., a, r, c].
template <class T>
Kernel<T> add_pair_bias_kernel() {
  // Calls `visit(offset of a t x u block of x, batch, head, block size)` for every block.
  auto for_each_block = [](const Tensor<T>& x, auto&& visit) {
    const std::int64_t batches = x.dims[0], rows = x.dims[1], heads = x.dims[2], size = x.dims[3] * x.dims[4];
    for (std::int64_t b = 0; b < batches; ++b)
      for (std::int64_t s = 0; s < rows; ++s)
        for (std::int64_t a = 0; a < heads; ++a) visit(((b * rows + s) * heads + a) * size, b, a, size);
  };
  Kernel<T> k;
  k.forward = [for_each_block](const OpCall<T>& c) {
    Tensor<T> out = c.input(0);
    const std::int64_t heads = out.dims[2];
    for_each_block(out, [&](std::int64_t at, std::int64_t b, std::int64_t a, std::int64_t n) {
      matrix(out, n, 1, at) += matrix(c.input(1), n, heads, b * n * heads).col(as_index(a));
    });
    return Tensors<T>{std::move(out)};
  };
  k.backward = [for_each_block](const GradCall<T>& g) {
    Tensors<T> grads{g.grad(0), zeros_like(g.input(1))};
    const std::int64_t heads = g.grad(0).dims[2];
    for_each_block(g.grad(0), [&](std::int64_t at, std::int64_t b, std::int64_t a, std::int64_t n) {
      matrix(grads[1], n, heads, b * n * heads).col(as_index(a)) += matrix(g.grad(0), n, 1, at);
    });
    return grads;
  };
  return k;
}

// a [*n, s, r, c] and b [*n, s, u, e] give out[.., x, y, f * e + g] = sum_t a[.., t, x, f] b[.., t, y, g] / s.
// Per batch, P = A^T B / s with A [s, r c] and B [s, u e] is the result with its axes ordered
// (x, f, y, g); the output orders them (x, y, f, g), one c x e block per (x, y).
template <class T>
Kernel<T> outer_product_mean_kernel() {
  struct Sizes {
    std::int64_t batches, s, r, c, u, e;
    T scale;
  };
  auto sizes = [](const OpCall<T>& call) {
    const auto& a = call.input(0);
    const auto& b = call.input(1);
    const std::size_t rank = a.rank();
    require_whole(call, 0, rank - 1, "the output's channels interleave both inputs' channels");
    require_whole(call, 1, rank - 1, "the output's channels interleave both inputs' channels");
    return Sizes{product(a.dims, 0, rank - 3),
                 a.dims[rank - 3],
                 a.dims[rank - 2],
                 a.dims[rank - 1],
                 b.dims[rank - 2],
                 b.dims[rank - 1],
                 T(1) / static_cast<T>(call.logical_size(0, rank - 3))};
  };
  Kernel<T> k;
  k.forward = [sizes](const OpCall<T>& call) {
    const Sizes z = sizes(call);
    std::vector<std::int64_t> dims(call.input(0).dims.begin(), call.input(0).dims.end() - 3);
    dims.insert(dims.end(), {z.r, z.u, z.c * z.e});
    Tensor<T> out(dims);
    RowMatrix<T> products(z.r * z.c, z.u * z.e);
    for (std::int64_t n = 0; n < z.batches; ++n) {
      products.noalias() = z.scale * (matrix(call.input(0), z.s, z.r * z.c, n * z.s * z.r * z.c).transpose() *
                                      matrix(call.input(1), z.s, z.u * z.e, n * z.s * z.u * z.e));
      for (std::int64_t x = 0; x < z.r; ++x)
        for (std::int64_t y = 0; y < z.u; ++y)
          matrix(out, z.c, z.e, ((n * z.r + x) * z.u + y) * z.c * z.e) = products.block(x * z.c, y * z.e, z.c, z.e);
    }
    return Tensors<T>{std::move(out)};
  };
  k.backward = [sizes](const GradCall<T>& g) {
    const Sizes z = sizes(g.call);
    Tensors<T> grads{gradient_if(g, 0), gradient_if(g, 1)};
    RowMatrix<T> dproducts(z.r * z.c, z.u * z.e);
    for (std::int64_t n = 0; n < z.batches; ++n) {
      for (std::int64_t x = 0; x < z.r; ++x)
        for (std::int64_t y = 0; y < z.u; ++y)
          dproducts.block(x * z.c, y * z.e, z.c, z.e) = z.scale * matrix(g.grad(0), z.c, z.e, ((n * z.r + x) * z.u + y) * z.c * z.e);
      const std::int64_t at_a = n * z.s * z.r * z.c, at_b = n * z.s * z.u * z.e;
      if (g.wants(0)) matrix(grads[0], z.s, z.r * z.c, at_a).noalias() = matrix(g.input(1), z.s, z.u * z.e, at_b) * dproducts.transpose();
      if (g.wants(1)) matrix(grads[1], z.s, z.u * z.e, at_b).noalias() = matrix(g.input(0), z.s, z.r * z.c, at_a) * dproducts;
    }
    return grads;
  };
  return k;
}

// [*n, p, q, c] -> [*n, c, p, q]: one transpose of a (p q) x c matrix per batch.
template <class T>
Tensor<T> channels_first(const Tensor<T>& x) {
  const std::size_t rank = x.rank();
  const std::int64_t batches = product(x.dims, 0, rank - 3), cells = x.dims[rank - 3] * x.dims[rank - 2], c = x.dims[rank - 1];
  std::vector<std::int64_t> dims = x.dims;
  std::rotate(dims.end() - 3, dims.end() - 1, dims.end());
  Tensor<T> out(dims);
  for (std::int64_t n = 0; n < batches; ++n) matrix(out, c, cells, n * cells * c) = matrix(x, cells, c, n * cells * c).transpose();
  return out;
}

// [*n, c, p, q] -> [*n, p, q, c].
template <class T>
Tensor<T> channels_last(const Tensor<T>& x) {
  const std::size_t rank = x.rank();
  const std::int64_t batches = product(x.dims, 0, rank - 3), c = x.dims[rank - 3], cells = x.dims[rank - 2] * x.dims[rank - 1];
  std::vector<std::int64_t> dims = x.dims;
  std::rotate(dims.end() - 3, dims.end() - 2, dims.end());
  Tensor<T> out(dims);
  for (std::int64_t n = 0; n < batches; ++n) matrix(out, cells, c, n * cells * c) = matrix(x, c, cells, n * cells * c).transpose();
  return out;
}

// Triangle multiplicative updates on a [*n, p, q, c] and b [*n, p', q', c], per batch and channel:
// outgoing edges out = a b^T (a [i, k], b [j, k]); incoming edges out = a^T b (a [k, i], b [k, j]).
// The contracted index k is bare, so its pieces give partial sums; i and j are pieces as they come.
template <class T>
Kernel<T> triangle_mult_kernel(bool incoming) {
  // The shapes of channels-first inputs: (batch, channel) blocks, each input's matrix and the output's.
  struct Sizes {
    std::int64_t blocks, ap, aq, bp, bq, rows, cols;
  };
  auto sizes = [incoming](const Tensor<T>& a, const Tensor<T>& b) {
    const std::size_t rank = a.rank();
    const std::int64_t ap = a.dims[rank - 2], aq = a.dims[rank - 1], bp = b.dims[rank - 2], bq = b.dims[rank - 1];
    return Sizes{product(a.dims, 0, rank - 2), ap, aq, bp, bq, incoming ? aq : ap, incoming ? bq : bp};
  };
  Kernel<T> k;
  k.forward = [=](const OpCall<T>& call) {
    const Tensor<T> a = channels_first(call.input(0)), b = channels_first(call.input(1));
    const Sizes z = sizes(a, b);
    std::vector<std::int64_t> dims = a.dims;
    dims[a.rank() - 2] = z.rows;
    dims[a.rank() - 1] = z.cols;
    Tensor<T> out(dims);
    for (std::int64_t n = 0; n < z.blocks; ++n) {
      const auto A = matrix(a, z.ap, z.aq, n * z.ap * z.aq);
      const auto B = matrix(b, z.bp, z.bq, n * z.bp * z.bq);
      auto O = matrix(out, z.rows, z.cols, n * z.rows * z.cols);
      if (incoming)
        O.noalias() = A.transpose() * B;
      else
        O.noalias() = A * B.transpose();
    }
    return Tensors<T>{channels_last(out)};
  };
  k.backward = [=](const GradCall<T>& g) {
    const Tensor<T> a = channels_first(g.input(0)), b = channels_first(g.input(1)), dout = channels_first(g.grad(0));
    const Sizes z = sizes(a, b);
    Tensors<T> grads{g.wants(0) ? Tensor<T>(a.dims) : Tensor<T>(), g.wants(1) ? Tensor<T>(b.dims) : Tensor<T>()};
    for (std::int64_t n = 0; n < z.blocks; ++n) {
      const auto A = matrix(a, z.ap, z.aq, n * z.ap * z.aq);
      const auto B = matrix(b, z.bp, z.bq, n * z.bp * z.bq);
      const auto dO = matrix(dout, z.rows, z.cols, n * z.rows * z.cols);
      if (g.wants(0)) {
        auto dA = matrix(grads[0], z.ap, z.aq, n * z.ap * z.aq);
        if (incoming)
          dA.noalias() = B * dO.transpose();
        else
          dA.noalias() = dO * B;
      }
      if (g.wants(1)) {
        auto dB = matrix(grads[1], z.bp, z.bq, n * z.bp * z.bq);
        if (incoming)
          dB.noalias() = A * dO;
        else
          dB.noalias() = dO.transpose() * A;
      }
    }
    for (Tensor<T>& grad : grads)
      if (!grad.dims.empty()) grad = channels_last(grad);
    return grads;
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::AddPairBias, add_pair_bias_kernel<T>());
  k.provide<T>(NativeKernel::OuterProductMean, outer_product_mean_kernel<T>());
  k.provide<T>(NativeKernel::TriangleMultOut, triangle_mult_kernel<T>(false));
  k.provide<T>(NativeKernel::TriangleMultIn, triangle_mult_kernel<T>(true));
}

}  // namespace

void add_pair_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

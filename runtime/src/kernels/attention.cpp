// Attention: per-head projections and their merge, scaled scores, the causal mask, relative
// position bias, the row lookup that feeds token ids in, and Luong dot attention. Scores divide by
// the square root of the logical head width, the mask compares logical positions and the lookup
// compares ids with logical row numbers, so each kernel computes its piece of the logical result
// on split pieces; dot attention's softmax needs every score of a row, so it refuses split rows.
#include <cmath>
#include <limits>

#include "eigen_views.hpp"
#include "kernels.hpp"
#include "loom/runtime/piece_checks.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

// `length` elements of `t` from `offset`, as a row vector (for broadcasting along rows).
template <class T>
Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> row_at(const Tensor<T>& t, std::int64_t offset, std::int64_t length) {
  return Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(t.data.data() + offset, as_index(length));
}

// q [*b, s, d] and k [*b, t, d] give q k^T / sqrt(d) per batch, d the logical width: a piece of d
// gives its partial sum of the logical scores.
template <class T>
Kernel<T> attention_scores_kernel() {
  struct Sizes {
    std::int64_t batches, s, t, d;
    T scale;
  };
  auto sizes = [](const OpCall<T>& c) {
    const auto& q = c.input(0);
    const std::size_t r = q.rank();
    return Sizes{product(q.dims, 0, r - 2), q.dims[r - 2], c.input(1).dims[r - 2], q.dims[r - 1],
                 T(1 / std::sqrt(static_cast<double>(c.logical_size(0, r - 1))))};
  };
  Kernel<T> k;
  k.forward = [sizes](const OpCall<T>& c) {
    const Sizes z = sizes(c);
    std::vector<std::int64_t> dims = c.input(0).dims;
    dims.back() = z.t;
    Tensor<T> out(dims);
    for (std::int64_t b = 0; b < z.batches; ++b)
      matrix(out, z.s, z.t, b * z.s * z.t).noalias() =
          z.scale * (matrix(c.input(0), z.s, z.d, b * z.s * z.d) * matrix(c.input(1), z.t, z.d, b * z.t * z.d).transpose());
    return Tensors<T>{std::move(out)};
  };
  k.backward = [sizes](const GradCall<T>& g) {
    const Sizes z = sizes(g.call);
    Tensors<T> grads{gradient_if(g, 0), gradient_if(g, 1)};
    for (std::int64_t b = 0; b < z.batches; ++b) {
      const auto dy = matrix(g.grad(0), z.s, z.t, b * z.s * z.t);
      if (g.wants(0)) matrix(grads[0], z.s, z.d, b * z.s * z.d).noalias() = z.scale * (dy * matrix(g.input(1), z.t, z.d, b * z.t * z.d));
      if (g.wants(1))
        matrix(grads[1], z.t, z.d, b * z.t * z.d).noalias() = z.scale * (dy.transpose() * matrix(g.input(0), z.s, z.d, b * z.s * z.d));
    }
    return grads;
  };
  return k;
}

// x [*b, s, s]: element (r, c) is kept when logical column c <= logical row r, else -inf.
template <class T>
Kernel<T> causal_mask_kernel() {
  // Calls `visit(flat offset, kept)` for every element of the piece.
  auto for_each = [](const OpCall<T>& c, auto&& visit) {
    const auto& x = c.input(0);
    const std::size_t r = x.rank();
    const std::int64_t rows = x.dims[r - 2], cols = x.dims[r - 1], batches = product(x.dims, 0, r - 2);
    const std::int64_t row0 = c.offset(0, r - 2), col0 = c.offset(0, r - 1);
    std::size_t at = 0;
    for (std::int64_t b = 0; b < batches; ++b)
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) visit(at++, col0 + j <= row0 + i);
  };
  Kernel<T> k;
  k.forward = [for_each](const OpCall<T>& c) {
    Tensor<T> out = c.input(0);
    for_each(c, [&](std::size_t at, bool kept) {
      if (!kept) out.data[at] = -std::numeric_limits<T>::infinity();
    });
    return Tensors<T>{std::move(out)};
  };
  k.backward = [for_each](const GradCall<T>& g) {
    Tensor<T> dx = g.grad(0);
    for_each(g.call, [&](std::size_t at, bool kept) {
      if (!kept) dx.data[at] = T(0);
    });
    return Tensors<T>{std::move(dx)};
  };
  return k;
}

// ids [*s] and table [v, *d]: out[i] is the table row whose logical number equals ids[i], zeros
// when the piece of the table holds no such row (a partial sum when the rows are split). Ids take
// no gradient.
template <class T>
Kernel<T> gather_rows_kernel() {
  // Calls `visit(id position, row in the table piece)` for every id naming a row of the piece.
  auto for_each_hit = [](const OpCall<T>& c, auto&& visit) {
    const auto& ids = c.input(0);
    const std::int64_t rows = c.input(1).dims[0], row0 = c.offset(1, 0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const T id = ids.data[i];
      if (std::floor(id) != id) continue;
      const double row = static_cast<double>(id) - static_cast<double>(row0);
      if (row >= 0 && row < static_cast<double>(rows)) visit(static_cast<std::int64_t>(i), static_cast<std::int64_t>(row));
    }
  };
  Kernel<T> k;
  k.forward = [for_each_hit](const OpCall<T>& c) {
    const auto& table = c.input(1);
    const std::int64_t width = product(table.dims, 1, table.rank());
    std::vector<std::int64_t> dims = c.input(0).dims;
    dims.insert(dims.end(), table.dims.begin() + 1, table.dims.end());
    Tensor<T> out(dims, T(0));
    for_each_hit(c, [&](std::int64_t i, std::int64_t row) { matrix(out, 1, width, i * width) = matrix(table, 1, width, row * width); });
    return Tensors<T>{std::move(out)};
  };
  k.backward = [for_each_hit](const GradCall<T>& g) {
    const auto& table = g.input(1);
    const std::int64_t width = product(table.dims, 1, table.rank());
    Tensors<T> grads{zeros_like(g.input(0)), zeros_like(table)};
    for_each_hit(g.call, [&](std::int64_t i, std::int64_t row) {
      matrix(grads[1], 1, width, row * width) += matrix(g.grad(0), 1, width, i * width);
    });
    return grads;
  };
  return k;
}

// x [*b, s, k], w [h, k, d] (and bias [h, d]) give [*b, h, s, d]: x w[a] (+ bias[a]) per head a.
template <class T>
Kernel<T> head_proj_kernel(bool has_bias) {
  struct Sizes {
    std::int64_t batches, s, k, h, d;
  };
  auto sizes = [](const OpCall<T>& c) {
    const auto& x = c.input(0);
    const auto& w = c.input(1);
    const std::size_t r = x.rank();
    return Sizes{product(x.dims, 0, r - 2), x.dims[r - 2], x.dims[r - 1], w.dims[0], w.dims[2]};
  };
  Kernel<T> kernel;
  kernel.forward = [=](const OpCall<T>& c) {
    const Sizes z = sizes(c);
    std::vector<std::int64_t> dims(c.input(0).dims.begin(), c.input(0).dims.end() - 2);
    dims.insert(dims.end(), {z.h, z.s, z.d});
    Tensor<T> out(dims);
    for (std::int64_t b = 0; b < z.batches; ++b)
      for (std::int64_t a = 0; a < z.h; ++a) {
        auto y = matrix(out, z.s, z.d, (b * z.h + a) * z.s * z.d);
        y.noalias() = matrix(c.input(0), z.s, z.k, b * z.s * z.k) * matrix(c.input(1), z.k, z.d, a * z.k * z.d);
        if (has_bias) y.rowwise() += row_at(c.input(2), a * z.d, z.d);
      }
    return Tensors<T>{std::move(out)};
  };
  kernel.backward = [=](const GradCall<T>& g) {
    const Sizes z = sizes(g.call);
    Tensors<T> grads{gradient_if(g, 0), gradient_if(g, 1)};
    if (has_bias) grads.push_back(gradient_if(g, 2));
    for (std::int64_t b = 0; b < z.batches; ++b)
      for (std::int64_t a = 0; a < z.h; ++a) {
        const auto dy = matrix(g.grad(0), z.s, z.d, (b * z.h + a) * z.s * z.d);
        if (g.wants(0)) matrix(grads[0], z.s, z.k, b * z.s * z.k).noalias() += dy * matrix(g.input(1), z.k, z.d, a * z.k * z.d).transpose();
        if (g.wants(1)) matrix(grads[1], z.k, z.d, a * z.k * z.d).noalias() += matrix(g.input(0), z.s, z.k, b * z.s * z.k).transpose() * dy;
        if (has_bias && g.wants(2)) matrix(grads[2], 1, z.d, a * z.d) += dy.colwise().sum();
      }
    return grads;
  };
  return kernel;
}

// x [*b, h, s, d], w [h, d, n], bias [n] give [*b, s, n]: the sum over heads a of x[a] w[a], plus bias.
template <class T>
Kernel<T> head_merge_kernel() {
  struct Sizes {
    std::int64_t batches, h, s, d, n;
  };
  auto sizes = [](const OpCall<T>& c) {
    const auto& x = c.input(0);
    const std::size_t r = x.rank();
    return Sizes{product(x.dims, 0, r - 3), x.dims[r - 3], x.dims[r - 2], x.dims[r - 1], c.input(1).dims[2]};
  };
  Kernel<T> kernel;
  kernel.forward = [sizes](const OpCall<T>& c) {
    const Sizes z = sizes(c);
    std::vector<std::int64_t> dims(c.input(0).dims.begin(), c.input(0).dims.end() - 3);
    dims.insert(dims.end(), {z.s, z.n});
    Tensor<T> out(dims);
    for (std::int64_t b = 0; b < z.batches; ++b) {
      auto y = matrix(out, z.s, z.n, b * z.s * z.n);
      y = row_vector(c.input(2)).replicate(as_index(z.s), 1);
      for (std::int64_t a = 0; a < z.h; ++a)
        y.noalias() += matrix(c.input(0), z.s, z.d, (b * z.h + a) * z.s * z.d) * matrix(c.input(1), z.d, z.n, a * z.d * z.n);
    }
    return Tensors<T>{std::move(out)};
  };
  kernel.backward = [sizes](const GradCall<T>& g) {
    const Sizes z = sizes(g.call);
    Tensors<T> grads{gradient_if(g, 0), gradient_if(g, 1), gradient_if(g, 2)};
    for (std::int64_t b = 0; b < z.batches; ++b) {
      const auto dy = matrix(g.grad(0), z.s, z.n, b * z.s * z.n);
      for (std::int64_t a = 0; a < z.h; ++a) {
        const std::int64_t at = (b * z.h + a) * z.s * z.d;
        if (g.wants(0)) matrix(grads[0], z.s, z.d, at).noalias() = dy * matrix(g.input(1), z.d, z.n, a * z.d * z.n).transpose();
        if (g.wants(1)) matrix(grads[1], z.d, z.n, a * z.d * z.n).noalias() += matrix(g.input(0), z.s, z.d, at).transpose() * dy;
      }
      if (g.wants(2)) matrix(grads[2], 1, z.n) += dy.colwise().sum();
    }
    return grads;
  };
  return kernel;
}

// x [*n, h, t, u] plus bias [t, u, h]: bias[r, c, a] is added to x[.., a, r, c].
template <class T>
Kernel<T> add_relative_bias_kernel() {
  // The bias as a (t u) x h matrix: column a is head a's bias, flattened.
  auto bias_columns = [](const Tensor<T>& bias) { return matrix(bias, bias.dims[0] * bias.dims[1], bias.dims[2]); };
  auto blocks = [](const Tensor<T>& x) {
    const std::size_t r = x.rank();
    return std::pair{product(x.dims, 0, r - 2), x.dims[r - 2] * x.dims[r - 1]};  // (batch, head) blocks and their size
  };
  Kernel<T> k;
  k.forward = [=](const OpCall<T>& c) {
    Tensor<T> out = c.input(0);
    const auto [count, size] = blocks(out);
    const auto bias = bias_columns(c.input(1));
    const std::int64_t heads = c.input(1).dims[2];
    for (std::int64_t i = 0; i < count; ++i) matrix(out, size, 1, i * size) += bias.col(as_index(i % heads));
    return Tensors<T>{std::move(out)};
  };
  k.backward = [=](const GradCall<T>& g) {
    Tensors<T> grads{g.grad(0), zeros_like(g.input(1))};
    const auto [count, size] = blocks(g.grad(0));
    auto bias = matrix(grads[1], g.input(1).dims[0] * g.input(1).dims[1], g.input(1).dims[2]);
    const std::int64_t heads = g.input(1).dims[2];
    for (std::int64_t i = 0; i < count; ++i) bias.col(as_index(i % heads)) += matrix(g.grad(0), size, 1, i * size);
    return grads;
  };
  return k;
}

// q [b, n] and mem [b, t, n]: per batch row i, the softmax over u of q[i] . mem[i, u] weighs the
// memory rows into the context vector out[i] = sum_u w[u] mem[i, u].
template <class T>
Kernel<T> dot_attention_kernel() {
  using Row = Eigen::Matrix<T, 1, Eigen::Dynamic>;
  struct Sizes {
    std::int64_t b, t, n;
  };
  auto sizes = [](const OpCall<T>& c) {
    require_whole(c, 0, 1, "the scores sum over the whole state");
    require_whole(c, 1, 1, "the softmax runs over the whole memory");
    require_whole(c, 1, 2, "the scores sum over the whole state");
    const auto& mem = c.input(1);
    return Sizes{mem.dims[0], mem.dims[1], mem.dims[2]};
  };
  // The attention weights of batch row i.
  auto weights = [](const OpCall<T>& c, const Sizes& z, std::int64_t i) {
    Row w = matrix(c.input(0), 1, z.n, i * z.n) * matrix(c.input(1), z.t, z.n, i * z.t * z.n).transpose();
    w.array() = (w.array() - w.maxCoeff()).exp();
    w /= w.sum();
    return w;
  };
  Kernel<T> k;
  k.forward = [=](const OpCall<T>& c) {
    const Sizes z = sizes(c);
    Tensor<T> out(c.input(0).dims);
    for (std::int64_t i = 0; i < z.b; ++i)
      matrix(out, 1, z.n, i * z.n).noalias() = weights(c, z, i) * matrix(c.input(1), z.t, z.n, i * z.t * z.n);
    return Tensors<T>{std::move(out)};
  };
  k.backward = [=](const GradCall<T>& g) {
    const Sizes z = sizes(g.call);
    Tensors<T> grads{gradient_if(g, 0), gradient_if(g, 1)};
    for (std::int64_t i = 0; i < z.b; ++i) {
      const auto mem = matrix(g.input(1), z.t, z.n, i * z.t * z.n);
      const auto dy = matrix(g.grad(0), 1, z.n, i * z.n);
      const Row w = weights(g.call, z, i);
      const Row dw = dy * mem.transpose();
      const Row dscore = w.cwiseProduct((dw.array() - w.dot(dw)).matrix());
      if (g.wants(0)) matrix(grads[0], 1, z.n, i * z.n).noalias() = dscore * mem;
      if (g.wants(1)) {
        auto dmem = matrix(grads[1], z.t, z.n, i * z.t * z.n);
        dmem.noalias() = w.transpose() * dy;
        dmem.noalias() += dscore.transpose() * matrix(g.input(0), 1, z.n, i * z.n);
      }
    }
    return grads;
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::AttentionScores, attention_scores_kernel<T>());
  k.provide<T>(NativeKernel::CausalMask, causal_mask_kernel<T>());
  k.provide<T>(NativeKernel::GatherRows, gather_rows_kernel<T>());
  k.provide<T>(NativeKernel::HeadProj, head_proj_kernel<T>(true));
  k.provide<T>(NativeKernel::HeadProjNoBias, head_proj_kernel<T>(false));
  k.provide<T>(NativeKernel::HeadMerge, head_merge_kernel<T>());
  k.provide<T>(NativeKernel::AddRelativeBias, add_relative_bias_kernel<T>());
  k.provide<T>(NativeKernel::DotAttention, dot_attention_kernel<T>());
}

}  // namespace

void add_attention_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

// Sequence-model operators on the device: table lookups (embedding, embedding_bag, gather_rows),
// the LSTM cell and attention's operators. Scores scale by the logical head width, the causal mask
// compares logical positions and lookups compare ids with logical row numbers, so on split pieces
// each kernel computes its piece of the logical result, as the CPU kernels do.
#include <cmath>

#include "kernel_adapter.hpp"
#include "loom/runtime/cuda/attention.hpp"
#include "loom/runtime/cuda/embedding.hpp"
#include "loom/runtime/cuda/lstm.hpp"

namespace loom::runtime::cuda_adapter {
namespace {

using Dims = std::vector<std::int64_t>;

// Ids take no gradient: zeros of their shape.
template <class T>
Value<T> id_gradient(const ValueGradCall<T>& g) {
  return zeros<T>(g.input(0).dims());
}

// embedding and embedding_bag: ids [bags] or [bags, per_bag], table [rows, width] -> [bags, width].
template <class T>
cuda::LookupShape bag_shape(const ValueCall<T>& c) {
  const auto& ids = c.input(0);
  if (ids.rank() < 1 || ids.rank() > 2) throw LoomError(c.op + ": the ids have rank " + std::to_string(ids.rank()) + ", not 1 or 2");
  require_rank(c, 1, 2);
  const auto& table = c.input(1).dims();
  return {ids.dims()[0], ids.rank() > 1 ? ids.dims()[1] : 1, table[0], table[1], c.offset(1, 0)};
}

// gather_rows: ids [*s], table [rows, *d] -> [*s, *d], one id per bag.
template <class T>
cuda::LookupShape gather_shape(const ValueCall<T>& c) {
  require_min_rank(c, 1, 1);
  const auto& table = c.input(1).dims();
  return {count(c.input(0)), 1, table[0], product(table, 1, table.size()), c.offset(1, 0)};
}

template <class T>
Kernel<T> lookup_kernel(bool gather) {
  auto shape_of = [gather](const ValueCall<T>& c) { return gather ? gather_shape(c) : bag_shape(c); };
  Kernel<T> k;
  k.forward_values = [gather, shape_of](const ValueCall<T>& c) {
    const cuda::LookupShape s = shape_of(c);
    auto out = scratch<T>(static_cast<std::size_t>(s.bags * s.width));
    cuda::lookup_forward<T>(context(), s, in(c.input(0)), in(c.input(1)), out.data());
    Dims dims{s.bags, s.width};
    if (gather) {
      dims = c.input(0).dims();
      dims.insert(dims.end(), c.input(1).dims().begin() + 1, c.input(1).dims().end());
    }
    return Values<T>{hold(std::move(out), dims)};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const cuda::LookupShape s = shape_of(g.call);
    auto dtable = gradient_buffer(g, 1);
    if (g.wants(1)) cuda::lookup_backward<T>(context(), s, in(g.input(0)), in(g.grad(0)), dtable.data());
    return Values<T>{id_gradient(g), gradient_of(g, 1, std::move(dtable))};
  };
  return k;
}

// lstm_cell(x [b, k], h [b, n], c [b, n], w [k, 4n], u [n, 4n], bias [4n]) -> (h_next, c_next).
template <class T>
Kernel<T> lstm_cell_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    for (std::size_t i = 0; i < 5; ++i) require_rank(c, i, 2);
    const cuda::LstmShape s{c.input(0).dims()[0], c.input(0).dims()[1], c.input(1).dims()[1]};
    const Dims want_w{s.input, 4 * s.hidden}, want_u{s.hidden, 4 * s.hidden};
    if (c.input(3).dims() != want_w || c.input(4).dims() != want_u || count(c.input(5)) != 4 * s.hidden)
      throw LoomError(c.op + ": the weights do not fit input width " + std::to_string(s.input) + " and hidden width " +
                      std::to_string(s.hidden));
    return s;
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::LstmShape s = shape_of(c);
    const std::size_t n = static_cast<std::size_t>(s.batch * s.hidden);
    auto h_next = scratch<T>(n), c_next = scratch<T>(n);
    cuda::lstm_cell_forward<T>(context(), s, in(c.input(0)), in(c.input(1)), in(c.input(2)), in(c.input(3)), in(c.input(4)), in(c.input(5)),
                               h_next.data(), c_next.data());
    return Values<T>{hold(std::move(h_next), {s.batch, s.hidden}), hold(std::move(c_next), {s.batch, s.hidden})};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const cuda::LstmShape s = shape_of(g.call);
    std::vector<DeviceBuffer<T>> d;
    for (std::size_t i = 0; i < 6; ++i) d.push_back(gradient_buffer(g, i));
    cuda::lstm_cell_backward<T>(context(), s, in(g.input(0)), in(g.input(1)), in(g.input(2)), in(g.input(3)), in(g.input(4)),
                                in(g.input(5)), in(g.output(1)), in(g.grad(0)), in(g.grad(1)), d[0].data(), d[1].data(), d[2].data(),
                                d[3].data(), d[4].data(), d[5].data());
    Values<T> grads;
    for (std::size_t i = 0; i < 6; ++i) grads.push_back(gradient_of(g, i, std::move(d[i])));
    return grads;
  };
  return k;
}

// q [*b, s, d] and k [*b, t, d] -> q k^T / sqrt(d) per batch, d the logical head width.
template <class T>
Kernel<T> attention_scores_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_min_rank(c, 0, 2);
    const Dims& q = c.input(0).dims();
    const Dims& k = c.input(1).dims();
    const std::size_t r = q.size();
    if (k.size() != r || k[r - 1] != q[r - 1] || product(k, 0, r - 2) != product(q, 0, r - 2))
      throw LoomError(c.op + ": the keys' shape does not fit the queries' (batches and head width must agree)");
    return cuda::ScoresShape{product(q, 0, r - 2), q[r - 2], k[r - 2], q[r - 1]};
  };
  auto scale_of = [](const ValueCall<T>& c) { return T(1 / std::sqrt(static_cast<double>(c.logical_size(0, c.input(0).rank() - 1)))); };
  Kernel<T> k;
  k.forward_values = [=](const ValueCall<T>& c) {
    const cuda::ScoresShape s = shape_of(c);
    auto out = scratch<T>(static_cast<std::size_t>(s.batches * s.s * s.t));
    cuda::attention_scores_forward<T>(context(), s, scale_of(c), in(c.input(0)), in(c.input(1)), out.data());
    Dims dims = c.input(0).dims();
    dims.back() = s.t;
    return Values<T>{hold(std::move(out), dims)};
  };
  k.backward_values = [=](const ValueGradCall<T>& g) {
    const cuda::ScoresShape s = shape_of(g.call);
    auto dq = gradient_buffer(g, 0), dk = gradient_buffer(g, 1);
    cuda::attention_scores_backward<T>(context(), s, scale_of(g.call), in(g.input(0)), in(g.input(1)), in(g.grad(0)), dq.data(), dk.data());
    return Values<T>{gradient_of(g, 0, std::move(dq)), gradient_of(g, 1, std::move(dk))};
  };
  return k;
}

// x [*b, s, s]: element (r, c) is kept when logical column c <= logical row r, else -inf.
template <class T>
Kernel<T> causal_mask_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_min_rank(c, 0, 2);
    const Dims& x = c.input(0).dims();
    const std::size_t r = x.size();
    return cuda::CausalShape{product(x, 0, r - 2), x[r - 2], x[r - 1], c.offset(0, r - 2), c.offset(0, r - 1)};
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    auto y = device_copy(c.input(0));
    cuda::causal_mask_forward<T>(context(), shape_of(c), y.data(), y.data());
    return Values<T>{hold(std::move(y), c.input(0).dims())};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    auto dx = device_copy(g.grad(0));
    cuda::causal_mask_backward<T>(context(), shape_of(g.call), dx.data(), dx.data());
    return Values<T>{hold(std::move(dx), g.input(0).dims())};
  };
  return k;
}

// x [*b, s, k], w [h, k, d] (and bias [h, d]) -> [*b, h, s, d]: x w[a] (+ bias[a]) per head a.
template <class T>
Kernel<T> head_proj_kernel(bool has_bias) {
  auto shape_of = [has_bias](const ValueCall<T>& c) {
    require_min_rank(c, 0, 2);
    require_rank(c, 1, 3);
    const Dims& x = c.input(0).dims();
    const Dims& w = c.input(1).dims();
    const std::size_t r = x.size();
    const cuda::HeadProjShape s{product(x, 0, r - 2), x[r - 2], x[r - 1], w[0], w[2]};
    if (w[1] != s.k || (has_bias && c.input(2).dims() != Dims{s.heads, s.d}))
      throw LoomError(c.op + ": the weights [" + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", " + std::to_string(w[2]) +
                      "] (or the bias) do not fit inputs of width " + std::to_string(s.k));
    return s;
  };
  Kernel<T> k;
  k.forward_values = [=](const ValueCall<T>& c) {
    const cuda::HeadProjShape s = shape_of(c);
    auto out = scratch<T>(static_cast<std::size_t>(s.batches * s.heads * s.s * s.d));
    DeviceBuffer<T> bias = has_bias ? device_copy(c.input(2)) : DeviceBuffer<T>();
    cuda::head_proj_forward<T>(context(), s, in(c.input(0)), in(c.input(1)), has_bias ? bias.data() : nullptr, out.data());
    Dims dims(c.input(0).dims().begin(), c.input(0).dims().end() - 2);
    dims.insert(dims.end(), {s.heads, s.s, s.d});
    return Values<T>{hold(std::move(out), dims)};
  };
  k.backward_values = [=](const ValueGradCall<T>& g) {
    const cuda::HeadProjShape s = shape_of(g.call);
    auto dx = gradient_buffer(g, 0), dw = gradient_buffer(g, 1);
    DeviceBuffer<T> dbias = has_bias ? gradient_buffer(g, 2) : DeviceBuffer<T>();
    cuda::head_proj_backward<T>(context(), s, in(g.input(0)), in(g.input(1)), in(g.grad(0)), dx.data(), dw.data(), dbias.data());
    Values<T> grads{gradient_of(g, 0, std::move(dx)), gradient_of(g, 1, std::move(dw))};
    if (has_bias) grads.push_back(gradient_of(g, 2, std::move(dbias)));
    return grads;
  };
  return k;
}

// x [*b, h, s, d], w [h, d, n], bias [n] -> [*b, s, n]: the sum over heads a of x[a] w[a], plus bias.
template <class T>
Kernel<T> head_merge_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_min_rank(c, 0, 3);
    require_rank(c, 1, 3);
    const Dims& x = c.input(0).dims();
    const Dims& w = c.input(1).dims();
    const std::size_t r = x.size();
    const cuda::HeadMergeShape s{product(x, 0, r - 3), x[r - 3], x[r - 2], x[r - 1], w[2]};
    if (w[0] != s.heads || w[1] != s.d || count(c.input(2)) != s.n)
      throw LoomError(c.op + ": the weights [" + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", " + std::to_string(w[2]) +
                      "] (or the bias) do not fit " + std::to_string(s.heads) + " heads of width " + std::to_string(s.d));
    return s;
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    const cuda::HeadMergeShape s = shape_of(c);
    auto out = scratch<T>(static_cast<std::size_t>(s.batches * s.s * s.n));
    cuda::head_merge_forward<T>(context(), s, in(c.input(0)), in(c.input(1)), in(c.input(2)), out.data());
    Dims dims(c.input(0).dims().begin(), c.input(0).dims().end() - 3);
    dims.insert(dims.end(), {s.s, s.n});
    return Values<T>{hold(std::move(out), dims)};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    const cuda::HeadMergeShape s = shape_of(g.call);
    auto dx = gradient_buffer(g, 0), dw = gradient_buffer(g, 1), dbias = gradient_buffer(g, 2);
    cuda::head_merge_backward<T>(context(), s, in(g.input(0)), in(g.input(1)), in(g.grad(0)), dx.data(), dw.data(), dbias.data());
    return Values<T>{gradient_of(g, 0, std::move(dx)), gradient_of(g, 1, std::move(dw)), gradient_of(g, 2, std::move(dbias))};
  };
  return k;
}

// x [*n, h, t, u] plus bias [t, u, h]: bias[r, c, a] is added to x[.., a, r, c].
template <class T>
Kernel<T> add_relative_bias_kernel() {
  auto shape_of = [](const ValueCall<T>& c) {
    require_min_rank(c, 0, 2);
    require_rank(c, 1, 3);
    const Dims& x = c.input(0).dims();
    const Dims& bias = c.input(1).dims();
    const std::size_t r = x.size();
    const cuda::RelativeBiasShape s{product(x, 0, r - 2), x[r - 2] * x[r - 1], bias[2]};
    if (bias[0] * bias[1] != s.size || s.heads <= 0)
      throw LoomError(c.op + ": the bias [" + std::to_string(bias[0]) + ", " + std::to_string(bias[1]) + ", " + std::to_string(bias[2]) +
                      "] does not fit blocks of " + std::to_string(s.size) + " elements");
    return s;
  };
  Kernel<T> k;
  k.forward_values = [shape_of](const ValueCall<T>& c) {
    auto y = device_copy(c.input(0));
    cuda::add_relative_bias_forward<T>(context(), shape_of(c), y.data(), in(c.input(1)), y.data());
    return Values<T>{hold(std::move(y), c.input(0).dims())};
  };
  k.backward_values = [shape_of](const ValueGradCall<T>& g) {
    auto dbias = gradient_buffer(g, 1);
    if (g.wants(1)) cuda::add_relative_bias_backward<T>(context(), shape_of(g.call), in(g.grad(0)), dbias.data());
    return Values<T>{g.grad(0), gradient_of(g, 1, std::move(dbias))};
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::Lookup, lookup_kernel<T>(false));
  k.provide<T>(NativeKernel::GatherRows, lookup_kernel<T>(true));
  k.provide<T>(NativeKernel::LstmCell, lstm_cell_kernel<T>());
  k.provide<T>(NativeKernel::AttentionScores, attention_scores_kernel<T>());
  k.provide<T>(NativeKernel::CausalMask, causal_mask_kernel<T>());
  k.provide<T>(NativeKernel::HeadProj, head_proj_kernel<T>(true));
  k.provide<T>(NativeKernel::HeadProjNoBias, head_proj_kernel<T>(false));
  k.provide<T>(NativeKernel::HeadMerge, head_merge_kernel<T>());
  k.provide<T>(NativeKernel::AddRelativeBias, add_relative_bias_kernel<T>());
}

}  // namespace

void add_sequence_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::cuda_adapter

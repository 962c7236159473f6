// Table lookups: embedding (one id per row) and embedding_bag (the sum of a bag of ids). As in the
// specs, an id that is not a row number of the table reads zeros; ids take no gradient. A piece of
// a table split by rows holds the rows from its offset on: ids of other rows read zeros there.
#include <cmath>

#include "eigen_views.hpp"
#include "kernels.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

// The row of the table piece (rows [first, first + rows) of the table) an id names, or -1.
template <class T>
std::int64_t row_of(T id, std::int64_t first, std::int64_t rows) {
  const T local = id - T(static_cast<double>(first));
  if (!(local >= T(0)) || local >= T(static_cast<double>(rows)) || std::floor(local) != local) return -1;
  return static_cast<std::int64_t>(local);
}

// ids [b] or [b, l]: each output row sums the table rows of its l ids.
template <class T>
Kernel<T> lookup_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    const auto& ids = c.input(0);
    const auto& table = c.input(1);
    const std::int64_t bags = ids.dims[0], per_bag = ids.rank() > 1 ? ids.dims[1] : 1;
    const std::int64_t rows = table.dims[0], width = table.dims[1];
    Tensor<T> y({bags, width}, T(0));
    for (std::int64_t b = 0; b < bags; ++b)
      for (std::int64_t t = 0; t < per_bag; ++t)
        if (const std::int64_t r = row_of(ids.data[static_cast<std::size_t>(b * per_bag + t)], c.offset(1, 0), rows); r >= 0)
          matrix(y, 1, width, b * width) += matrix(table, 1, width, r * width);
    return Tensors<T>{std::move(y)};
  };
  k.backward = [](const GradCall<T>& g) {
    const auto& ids = g.input(0);
    const auto& table = g.input(1);
    const std::int64_t bags = ids.dims[0], per_bag = ids.rank() > 1 ? ids.dims[1] : 1;
    const std::int64_t rows = table.dims[0], width = table.dims[1];
    Tensors<T> grads{Tensor<T>(ids.dims, T(0)), Tensor<T>(table.dims, T(0))};
    for (std::int64_t b = 0; b < bags; ++b)
      for (std::int64_t t = 0; t < per_bag; ++t)
        if (const std::int64_t r = row_of(ids.data[static_cast<std::size_t>(b * per_bag + t)], g.call.offset(1, 0), rows); r >= 0)
          matrix(grads[1], 1, width, r * width) += matrix(g.grad(0), 1, width, b * width);
    return grads;
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::Lookup, lookup_kernel<T>());
}

}  // namespace

void add_embedding_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels

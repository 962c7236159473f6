#pragma once
// Eigen views over the contiguous row-major buffers of runtime tensors.
#include <Eigen/Dense>

#include "loom/runtime/kernel.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime::kernels {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixView = Eigen::Map<RowMatrix<T>>;
template <class T>
using ConstMatrixView = Eigen::Map<const RowMatrix<T>>;
template <class T>
using ArrayView = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrayView = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

inline Eigen::Index as_index(std::int64_t v) { return static_cast<Eigen::Index>(v); }

template <class T>
ConstMatrixView<T> matrix(const Tensor<T>& t, std::int64_t rows, std::int64_t cols, std::int64_t offset = 0) {
  return ConstMatrixView<T>(t.data.data() + offset, as_index(rows), as_index(cols));
}
template <class T>
MatrixView<T> matrix(Tensor<T>& t, std::int64_t rows, std::int64_t cols, std::int64_t offset = 0) {
  return MatrixView<T>(t.data.data() + offset, as_index(rows), as_index(cols));
}
// A whole tensor as one row, for broadcasting along rows.
template <class T>
Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> row_vector(const Tensor<T>& t) {
  return Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(t.data.data(), as_index(static_cast<std::int64_t>(t.size())));
}

// A whole tensor as one column, for broadcasting along columns.
template <class T>
Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> column_vector(const Tensor<T>& t) {
  return Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(t.data.data(), as_index(static_cast<std::int64_t>(t.size())));
}

template <class T>
ConstArrayView<T> array(const Tensor<T>& t) {
  return ConstArrayView<T>(t.data.data(), as_index(static_cast<std::int64_t>(t.size())));
}
template <class T>
ArrayView<T> array(Tensor<T>& t) {
  return ArrayView<T>(t.data.data(), as_index(static_cast<std::int64_t>(t.size())));
}

// The last dimension, and the product of all the others (1 for a vector).
inline std::int64_t last_dim(const std::vector<std::int64_t>& dims) { return dims.empty() ? 1 : dims.back(); }
inline std::int64_t leading_rows(const std::vector<std::int64_t>& dims) {
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) rows *= dims[i];
  return rows;
}
// Product of dims[begin, end).
inline std::int64_t product(const std::vector<std::int64_t>& dims, std::size_t begin, std::size_t end) {
  std::int64_t p = 1;
  for (std::size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

template <class T>
Tensor<T> zeros_like(const Tensor<T>& t) {
  return Tensor<T>(t.dims, T(0));
}

// A zero gradient for `input`, or an empty tensor when it is not wanted.
template <class T>
Tensor<T> gradient_if(const GradCall<T>& g, std::size_t input) {
  return g.wants(input) ? zeros_like(g.input(input)) : Tensor<T>();
}

}  // namespace loom::runtime::kernels

#pragma once
// Tensors as NumPy .npy files, read and written with xtensor's reader and writer.
#include <string>

#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

// The array in a .npy file of float32, float64, int32 or int64 elements, in C or Fortran order,
// as doubles in row-major order. Throws LoomError naming the file: missing, not a .npy file, or
// of another element type.
Tensor<double> read_npy(const std::string& path);

// Writes `t` as a .npy file (float32 for float, float64 for double), atomically: a failed write
// leaves what was there. Throws LoomError naming the file.
template <class T>
void write_npy(const std::string& path, const Tensor<T>& t);

}  // namespace loom::runtime

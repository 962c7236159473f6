#pragma once
// The loop shape of an operator's task, read off its comprehension: how close a kernel of that
// shape comes to a device's peak FLOP/s or bandwidth differs by shape, so the roofline is
// calibrated per shape (search::DeviceSpec::achieved_fraction).
#include <array>
#include <optional>
#include <string>

namespace loom::pcg {

// In order of weight: a comprehension's shape is that of the heaviest loop it runs.
enum class KernelShape {
  Elementwise,     // no reduction: each output element from a few input elements, by arithmetic
  Transcendental,  // no reduction, an exponential, logarithm, tanh, sigmoid, erf or power per element
  Reduction,       // a sum, max or min over an index of a value (softmax, norms, pooling)
  Contraction,     // a sum over an index of a product of two values read at bare indices (GEMM)
  Convolution,     // such a sum where a read's index is computed (a sliding window)
};

inline constexpr std::array<KernelShape, 5> kKernelShapes = {KernelShape::Elementwise, KernelShape::Transcendental, KernelShape::Reduction,
                                                             KernelShape::Contraction, KernelShape::Convolution};

// "elementwise", "transcendental", "reduction", "contraction", "convolution": as machine files
// name them.
std::string kernel_shape_name(KernelShape shape);
std::optional<KernelShape> kernel_shape_from_name(const std::string& name);

// One `value` per kernel shape.
template <class T>
constexpr std::array<T, kKernelShapes.size()> per_kernel_shape(T value) {
  std::array<T, kKernelShapes.size()> out{};
  out.fill(value);
  return out;
}

}  // namespace loom::pcg

#include "loom/pcg/kernel_shape.hpp"

namespace loom::pcg {

std::string kernel_shape_name(KernelShape shape) {
  switch (shape) {
    case KernelShape::Elementwise: return "elementwise";
    case KernelShape::Transcendental: return "transcendental";
    case KernelShape::Reduction: return "reduction";
    case KernelShape::Contraction: return "contraction";
    case KernelShape::Convolution: return "convolution";
  }
  return "elementwise";
}

std::optional<KernelShape> kernel_shape_from_name(const std::string& name) {
  for (KernelShape shape : kKernelShapes)
    if (kernel_shape_name(shape) == name) return shape;
  return std::nullopt;
}

}  // namespace loom::pcg

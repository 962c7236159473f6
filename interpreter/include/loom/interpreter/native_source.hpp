#pragma once
// An operator instance's comprehension written out as C++ loops, to be built by the system
// compiler: the same values and derived gradient as the interpreter (`evaluate`,
// `evaluate_gradient`), at native speed. A reduction that does not depend on the inner indices of
// its statement is computed once, outside those loops, and its gradient gathered there too.
#include <string>

#include "loom/interpreter/program.hpp"

namespace loom::spec {

enum class NativeType { Float, Double };

// The source defines, with C linkage:
//   void loom_forward(T* const* buffers);
//     every statement in order; `buffers[b]` is buffer b of the program (inputs filled in, `let`s
//     and outputs written).
//   void loom_backward(T* const* values, T* const* grads);
//     `values` as a forward pass left them; `grads[b]` zero except the outputs' gradients; adds
//     into every input's and `let`'s gradient.
// T is float or double. Throws LoomError for a body the interpreter would refuse too.
std::string native_source(const Program& program, NativeType type);

}  // namespace loom::spec

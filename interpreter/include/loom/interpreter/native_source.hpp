#pragma once
// An operator instance's comprehension written out as C++ loops, to be built by the system
// compiler: the same values and derived gradient as the interpreter (`evaluate`,
// `evaluate_gradient`), at native speed. A reduction that does not depend on the inner indices of
// its statement is computed once, outside those loops, and its gradient gathered there too.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/interpreter/program.hpp"

namespace loom::spec {

enum class NativeType { Float, Double };

template <class T>
constexpr NativeType native_type_of() {
  return std::is_same_v<T, float> ? NativeType::Float : NativeType::Double;
}

// C = op(A) op(B) on row-major matrices, C m x n: op(A) is m x k (A stored k x m when `trans_a`),
// op(B) is k x n (B stored n x k when `trans_b`).
template <class T>
using NativeGemm = void (*)(int trans_a, int trans_b, long long m, long long n, long long k, const T* a, const T* b, T* c);

// The source defines, with C linkage (the pointers are T* and NativeGemm<T>):
//   void loom_forward(void* const* buffers, const long long* sizes, void* gemm, int lets_only);
//     every statement in order (only those of `let`s when `lets_only`, as the backward needs);
//     `buffers[b]` is buffer b of the program (inputs filled in, `let`s and outputs written).
//   void loom_backward(void* const* values, void* const* grads, const long long* sizes, void* gemm);
//     `values` as a forward pass left them, outputs included; `grads[b]` zero except the
//     outputs' gradients, which it only reads; adds into every input's and `let`'s gradient.
// T is float or double. A contraction (`sum(k) a[..] * b[..]`, every index bare and in range,
// its other indices the statement's), a whole body or part of one, packs its operands and calls
// `gemm`, batch by batch. Throws LoomError for a body the interpreter would refuse too.
//
// Every number that depends on the instance (the extents, strides and sizes, and the constants
// compiled from attributes, dimension symbols and a piece's offsets: CNode::sized) is read from
// `sizes`, which NativeSource::sizes holds for this instance, except the extents of innermost
// loops and dimensions, which are written out so that the compiler vectorizes and unrolls with
// them. The source is the same for every instance of the operator's shape class: those whose loops
// have the same structure (the same ranks, the same reads guarded against their tensor's edge,
// the same reductions taken out of the loops, the same contractions) and the same innermost
// extents, and differ only in other numbers. One kernel serves them all.
//
// Where the interpreter skips a point whose gradient is zero, the compiled gradient adds zeros
// instead; the two differ only where a partial derivative is infinite or NaN: through a
// contraction (its GEMM multiplies the zeros in), or through a reduction taken out of the loops
// (whose points' gradients are summed before they pass through it).
struct NativeSource {
  std::string code;
  bool guarded_reads = false;       // some read happens only under a condition: its tensor's edge, a select's
  std::vector<std::int64_t> sizes;  // the instance's numbers, in the order the source reads them
};
NativeSource native_source(const Program& program, NativeType type);

}  // namespace loom::spec

#pragma once
// An operator instance run as machine code: its comprehension written as C++ (native_source),
// built by the system compiler into a shared object, kept on disk under the source's fingerprint
// and loaded once per process. The source is that of the instance's shape class, so instances
// differing only in sizes, attribute values or a piece's offsets share one kernel, each passing
// its own numbers. The interpreter stays the reference, and the fallback wherever no
// compiler is found or a build fails.
#include <memory>
#include <string>
#include <vector>

#include "loom/interpreter/native_source.hpp"
#include "loom/interpreter/program.hpp"
#include "loom/interpreter/tensor.hpp"

namespace loom::spec {

// Where kernels are built and kept, read from the environment:
// - LOOM_CXX: the compiler (default `c++` on PATH); `none` turns compiled kernels off;
// - LOOM_KERNEL_CACHE: the cache folder (default `kernels` in pcg::user_cache_dir(): under
//   $XDG_CACHE_HOME/loom, else ~/.cache/loom); it must be the user's own and not writable by
//   others, since the libraries in it are loaded.
struct NativeToolchain {
  std::string compiler;  // a path; empty when there is none
  std::string cache_dir;
  std::string why_none;  // why `compiler` is empty
  bool clang = false;    // the compiler is Clang (else taken for GCC)

  static const NativeToolchain& from_environment();
};

class NativeProgram {
 public:
  using Forward = void (*)(void* const*, const long long*, void*, int);
  using Backward = void (*)(void* const*, void* const*, const long long*, void*);

  NativeProgram(const Program& program, NativeType type, std::vector<std::int64_t> sizes, Forward forward, Backward backward);

  NativeType type() const { return type_; }

  // As `evaluate<RealDomain>` and `evaluate_gradient`, computed in T (which must match type()).
  // `outputs`, the forward outputs when the caller keeps them, spare computing them again. Throws
  // LoomError for tensors of the wrong shape or element type.
  template <class T>
  std::vector<Tensor<T>> evaluate(const std::vector<const Tensor<T>*>& inputs) const;
  template <class T>
  std::vector<Tensor<T>> gradient(const std::vector<const Tensor<T>*>& inputs, const std::vector<const Tensor<T>*>& output_grads,
                                  const std::vector<const Tensor<T>*>& outputs = {}) const;

 private:
  void check_dims(const std::string& what, std::size_t index, const std::vector<std::int64_t>& got, int buffer) const;
  // Points every buffer without a pointer yet at a zero tensor of its shape, kept in `owned`.
  template <class T>
  void zero_the_rest(std::vector<T*>& pointers, std::vector<Tensor<T>>& owned) const;
  template <class T>
  std::vector<Tensor<T>> run_forward(const std::vector<const Tensor<T>*>& inputs, std::vector<T*>& pointers, bool lets_only) const;

  std::string op_;
  std::vector<std::vector<std::int64_t>> buffer_dims_;
  std::vector<int> input_buffers_, output_buffers_;
  NativeType type_;
  std::vector<long long> sizes_;  // NativeSource::sizes
  Forward forward_;
  Backward backward_;
};

struct NativeBuild {
  std::shared_ptr<const NativeProgram> program;  // null when it could not be built
  std::string why_not;                           // then, the reason
  std::string library;                           // the shared object it runs, shared by its shape class
};

// `program` in `type`: loaded from the cache, or built into it first. Reports a missing compiler
// or a failed build in `why_not` (the compiler's messages stay in the cache folder), never throws
// for them.
NativeBuild build_native(const Program& program, NativeType type, const NativeToolchain& toolchain = NativeToolchain::from_environment());

}  // namespace loom::spec

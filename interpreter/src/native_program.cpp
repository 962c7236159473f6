#include "loom/interpreter/native_program.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <type_traits>

#include <Eigen/Dense>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/fnv1a.hpp"
#include "loom/pcg/user_cache.hpp"

extern char** environ;

namespace loom::spec {
namespace fs = std::filesystem;

namespace {

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : "";
  std::stringstream path(environment("PATH"));
  for (std::string dir; std::getline(path, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string default_cache_dir() {
  if (auto dir = environment("LOOM_KERNEL_CACHE"); !dir.empty()) return dir;
  return (fs::path(pcg::user_cache_dir()) / "kernels").string();
}

// The processor the kernels are built for (-march=native): a cache shared by machines of other
// processors keeps their kernels apart.
std::string processor() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string text, line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) {
      text += line + "\n";
      if (line.rfind("flags", 0) == 0) break;
    }
  return text;
}

// Reassociation lets sums vectorize, as the hand-written kernels' Eigen reductions do: a sum
// may round differently from the interpreter's, and an expression like (x + y) - y may become x.
// Reciprocals let a division by a row's statistic (softmax's sum, layer norm's deviation) become
// one division per row and a product per element, as the hand-written kernels compute it.
// GCC 12's loop vectorizer gets a loop with a read guarded by a bounds check wrong at -O3
// -march=native: `y[i*2+j] = (i-1 >= 0 && i-1 < 3) ? x[(i-1)*2+j] : 0` over 6 x 2 leaves zeros
// where x has values (pad_axis; Clang and -O2 are right), and so does a read in a select's
// branch: `y[i, r, c] = c <= r + off ? x[i, r, c] : -inf` over rows of 6 passes rows 0 and 2 of
// 2 x 2 x 6 pieces as -inf (causal_mask). Kernels with such reads keep their conditions
// unconverted, and so those loops unvectorized.
std::vector<std::string> compile_flags(const NativeToolchain& tools, bool guarded_reads) {
  std::vector<std::string> flags = {"-std=c++17",
                                    "-O3",
                                    "-march=native",
                                    "-fPIC",
                                    "-shared",
                                    "-fno-math-errno",
                                    "-fno-trapping-math",
                                    "-fno-signed-zeros",
                                    "-fassociative-math",
                                    "-freciprocal-math",
                                    "-fopenmp-simd",
                                    "-w"};
  if (guarded_reads && !tools.clang) flags.push_back("-fno-tree-loop-if-convert");
  return flags;
}

std::string first_lines(const std::string& path, int count) {
  std::ifstream in(path);
  std::string text, line;
  for (int i = 0; i < count && std::getline(in, line); ++i) text += (i ? "\n" : "") + line;
  return text;
}

// Runs `argv` with its messages written to `log`; returns "" when it exits 0, else what happened.
std::string run_compiler(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int started = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0) return std::string("could not start: ") + std::strerror(started);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return std::string("could not be waited for: ") + std::strerror(errno);
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "failed (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  return "";
}

// Whether `compiler --version` names Clang (`c++` may be either).
bool says_clang(const std::string& compiler) {
  std::error_code ec;
  const fs::path out = fs::temp_directory_path(ec) / ("loom-cxx-version." + std::to_string(::getpid()));
  if (ec || !run_compiler({compiler, "--version"}, out.string()).empty()) return false;
  const bool clang = first_lines(out.string(), 1).find("clang") != std::string::npos;
  fs::remove(out, ec);
  return clang;
}

// A name no other process, here or on another host sharing the folder, makes at the same time.
std::string unique_suffix() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  static std::mt19937_64 rng{std::random_device{}()};
  return std::string(host) + "." + std::to_string(::getpid()) + "." + std::to_string(rng() % 1000000007ULL);
}

// Builds `source` into `<dir>/<key>.so` unless it is there; returns the library's path, or "" with
// `why` set. Concurrent builders (ranks of one job) each write their own file and rename it.
std::string built_library(const NativeSource& source, const std::string& key, const NativeToolchain& tools, std::string& why) {
  std::error_code ec;
  const fs::path dir(tools.cache_dir);
  if (fs::create_directories(dir, ec)) fs::permissions(dir, fs::perms::owner_all, ec);
  // Shared objects in the folder are loaded: it must be this user's and writable by no one else.
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0 || info.st_uid != ::getuid() || (info.st_mode & (S_IWGRP | S_IWOTH))) {
    why = "the kernel cache " + dir.string() + " is missing, another user's, or writable by others";
    return "";
  }
  const fs::path library = dir / (key + ".so");
  if (fs::exists(library, ec)) return library.string();
  const std::string unique = key + "." + unique_suffix();
  const fs::path source_file = dir / (unique + ".cpp"), built = dir / (unique + ".so"), log = dir / (unique + ".log");
  {
    std::ofstream out(source_file);
    out << source.code;
    if (!out) {
      why = "cannot write " + source_file.string();
      return "";
    }
  }
  std::vector<std::string> argv = {tools.compiler};
  for (const std::string& f : compile_flags(tools, source.guarded_reads)) argv.push_back(f);
  for (const std::string& a : {source_file.string(), std::string("-o"), built.string(), std::string("-lmvec")}) argv.push_back(a);
  const std::string failure = run_compiler(argv, log.string());
  if (!failure.empty() || !fs::exists(built, ec)) {
    why = tools.compiler + " " + (failure.empty() ? "wrote no library" : failure) + " (messages in " + log.string() +
          "): " + first_lines(log.string(), 3);
    fs::remove(built, ec);
    return "";
  }
  fs::rename(built, library, ec);
  if (ec) {
    why = "cannot move " + built.string() + " into the cache: " + ec.message();
    return "";
  }
  fs::rename(source_file, dir / (key + ".cpp"), ec);
  fs::remove(log, ec);
  return library.string();
}

template <class T>
void eigen_gemm(int trans_a, int trans_b, long long m, long long n, long long k, const T* a, const T* b, T* c) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const Matrix> A(a, trans_a ? k : m, trans_a ? m : k), B(b, trans_b ? n : k, trans_b ? k : n);
  Eigen::Map<Matrix> C(c, m, n);
  if (trans_a && trans_b)
    C.noalias() = A.transpose() * B.transpose();
  else if (trans_a)
    C.noalias() = A.transpose() * B;
  else if (trans_b)
    C.noalias() = A * B.transpose();
  else
    C.noalias() = A * B;
}

template <class T>
void* gemm_of() {
  return reinterpret_cast<void*>(static_cast<NativeGemm<T>>(&eigen_gemm<T>));
}

}  // namespace

const NativeToolchain& NativeToolchain::from_environment() {
  static const NativeToolchain tools = [] {
    NativeToolchain t;
    t.cache_dir = default_cache_dir();
    const std::string wanted = environment("LOOM_CXX");
    if (wanted == "none") {
      t.why_none = "LOOM_CXX=none turns compiled kernels off";
      return t;
    }
    t.compiler = on_path(wanted.empty() ? "c++" : wanted);
    if (t.compiler.empty()) {
      t.why_none = wanted.empty() ? "no C++ compiler (c++) on PATH; set LOOM_CXX" : "LOOM_CXX=" + wanted + " is not an executable";
      return t;
    }
    t.clang = says_clang(t.compiler);
    return t;
  }();
  return tools;
}

NativeProgram::NativeProgram(const Program& program, NativeType type, std::vector<std::int64_t> sizes, Forward forward, Backward backward)
    : op_(program.op->name),
      input_buffers_(program.input_buffers),
      output_buffers_(program.output_buffers),
      type_(type),
      sizes_(sizes.begin(), sizes.end()),
      forward_(forward),
      backward_(backward) {
  for (const Buffer& b : program.buffers) buffer_dims_.push_back(b.dims);
}

void NativeProgram::check_dims(const std::string& what, std::size_t index, const std::vector<std::int64_t>& got, int buffer) const {
  const auto& want = buffer_dims_[static_cast<std::size_t>(buffer)];
  if (got != want)
    throw LoomError(op_ + ": " + what + " " + std::to_string(index) + " has shape " + dims_to_string(got) + ", the instance's is " +
                    dims_to_string(want));
}

template <class T>
void NativeProgram::zero_the_rest(std::vector<T*>& pointers, std::vector<Tensor<T>>& owned) const {
  for (std::size_t b = 0; b < buffer_dims_.size(); ++b) {
    if (pointers[b]) continue;
    owned[b] = Tensor<T>(buffer_dims_[b], T(0));
    pointers[b] = owned[b].data.data();
  }
}

template <class T>
std::vector<Tensor<T>> NativeProgram::run_forward(const std::vector<const Tensor<T>*>& inputs, std::vector<T*>& pointers,
                                                  bool lets_only) const {
  if (native_type_of<T>() != type_) throw LoomError(op_ + ": a compiled kernel called with the wrong element type");
  if (inputs.size() != input_buffers_.size()) throw LoomError(op_ + ": wrong number of input tensors");
  std::vector<Tensor<T>> owned(buffer_dims_.size());
  pointers.assign(buffer_dims_.size(), nullptr);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check_dims("input", i, inputs[i]->dims, input_buffers_[i]);
    pointers[static_cast<std::size_t>(input_buffers_[i])] = const_cast<T*>(inputs[i]->data.data());
  }
  zero_the_rest(pointers, owned);
  forward_(reinterpret_cast<void* const*>(pointers.data()), sizes_.data(), gemm_of<T>(), lets_only ? 1 : 0);
  return owned;
}

template <class T>
std::vector<Tensor<T>> NativeProgram::evaluate(const std::vector<const Tensor<T>*>& inputs) const {
  std::vector<T*> pointers;
  std::vector<Tensor<T>> buffers = run_forward(inputs, pointers, false);
  std::vector<Tensor<T>> outputs;
  for (int b : output_buffers_) outputs.push_back(std::move(buffers[static_cast<std::size_t>(b)]));
  return outputs;
}

template <class T>
std::vector<Tensor<T>> NativeProgram::gradient(const std::vector<const Tensor<T>*>& inputs,
                                               const std::vector<const Tensor<T>*>& output_grads,
                                               const std::vector<const Tensor<T>*>& outputs) const {
  if (output_grads.size() != output_buffers_.size())
    throw LoomError(op_ + ": " + std::to_string(output_grads.size()) + " output gradients for " + std::to_string(output_buffers_.size()) +
                    " outputs");
  const bool given = !outputs.empty();
  if (given && outputs.size() != output_buffers_.size())
    throw LoomError(op_ + ": " + std::to_string(outputs.size()) + " outputs given for " + std::to_string(output_buffers_.size()));
  for (std::size_t k = 0; k < outputs.size(); ++k) check_dims("output", k, outputs[k]->dims, output_buffers_[k]);
  std::vector<T*> values;
  const std::vector<Tensor<T>> kept = run_forward(inputs, values, given);
  for (std::size_t k = 0; k < outputs.size(); ++k)
    values[static_cast<std::size_t>(output_buffers_[k])] = const_cast<T*>(outputs[k]->data.data());
  std::vector<Tensor<T>> grads(buffer_dims_.size());
  std::vector<T*> grad_pointers(buffer_dims_.size(), nullptr);
  // The outputs' gradients are only read: they are passed as given.
  for (std::size_t k = 0; k < output_grads.size(); ++k) {
    if (!output_grads[k]) continue;
    check_dims("the gradient of output", k, output_grads[k]->dims, output_buffers_[k]);
    grad_pointers[static_cast<std::size_t>(output_buffers_[k])] = const_cast<T*>(output_grads[k]->data.data());
  }
  zero_the_rest(grad_pointers, grads);
  backward_(reinterpret_cast<void* const*>(values.data()), reinterpret_cast<void* const*>(grad_pointers.data()), sizes_.data(),
            gemm_of<T>());
  std::vector<Tensor<T>> result;
  for (int b : input_buffers_) result.push_back(std::move(grads[static_cast<std::size_t>(b)]));
  return result;
}

NativeBuild build_native(const Program& program, NativeType type, const NativeToolchain& toolchain) {
  if (toolchain.compiler.empty()) return {nullptr, toolchain.why_none, ""};
  NativeSource source;
  try {
    source = native_source(program, type);
  } catch (const LoomError& e) {
    return {nullptr, e.what(), ""};
  }
  std::ostringstream id;
  id << toolchain.compiler << '\n' << processor();
  for (const std::string& f : compile_flags(toolchain, source.guarded_reads)) id << ' ' << f;
  id << '\n' << source.code;
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(pcg::fnv1a(id.str())));

  struct Entries {
    NativeProgram::Forward forward;
    NativeProgram::Backward backward;
    std::string library;
  };
  static std::mutex mutex;
  static std::map<std::string, Entries> loaded;  // by cache folder and key
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string where = (fs::path(toolchain.cache_dir) / key).string();
  if (auto it = loaded.find(where); it != loaded.end())
    return {std::make_shared<const NativeProgram>(program, type, source.sizes, it->second.forward, it->second.backward), "",
            it->second.library};
  std::string why;
  void* handle = nullptr;
  std::string library;
  // A library in the cache that does not load (cut short, say) is built again, once.
  for (int attempt = 0; attempt < 2 && !handle; ++attempt) {
    library = built_library(source, key, toolchain, why);
    if (library.empty()) return {nullptr, why, ""};
    handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      why = std::string("cannot load ") + library + ": " + ::dlerror();
      std::error_code ec;
      fs::remove(library, ec);
    }
  }
  if (!handle) return {nullptr, why, ""};
  auto forward = reinterpret_cast<NativeProgram::Forward>(::dlsym(handle, "loom_forward"));
  auto backward = reinterpret_cast<NativeProgram::Backward>(::dlsym(handle, "loom_backward"));
  if (!forward || !backward) {
    ::dlclose(handle);
    return {nullptr, library + " lacks loom_forward or loom_backward", library};
  }
  loaded.emplace(where, Entries{forward, backward, library});
  return {std::make_shared<const NativeProgram>(program, type, source.sizes, forward, backward), "", library};
}

template std::vector<Tensor<float>> NativeProgram::evaluate(const std::vector<const Tensor<float>*>&) const;
template std::vector<Tensor<double>> NativeProgram::evaluate(const std::vector<const Tensor<double>*>&) const;
template std::vector<Tensor<float>> NativeProgram::gradient(const std::vector<const Tensor<float>*>&,
                                                            const std::vector<const Tensor<float>*>&,
                                                            const std::vector<const Tensor<float>*>&) const;
template std::vector<Tensor<double>> NativeProgram::gradient(const std::vector<const Tensor<double>*>&,
                                                             const std::vector<const Tensor<double>*>&,
                                                             const std::vector<const Tensor<double>*>&) const;

}  // namespace loom::spec

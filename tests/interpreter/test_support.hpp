#pragma once
// Small helpers shared by the interpreter tests: the bundled library, parallel shapes, source
// positions of a snippet inside a test's spec text, and scratch directories for .loom files.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <functional>

#include "loom/interpreter/library.hpp"

namespace loom::spec::test {

// The bundled library, loaded once per test binary.
inline const Library& bundled() {
  static Library lib = Library::load({Library::default_specs_dir()});
  return lib;
}

// Imports of the bundled core, linalg, shape and parallel operators, for a test's spec text.
inline std::string bundled_imports() {
  const std::string dir = Library::default_specs_dir();
  return "import \"" + dir + "/ops/core.loom\";\nimport \"" + dir + "/ops/linalg.loom\";\nimport \"" + dir +
         "/ops/shape.loom\";\nimport \"" + dir + "/ops/parallel.loom\";\n";
}

// A parallel shape: dims with optional D degrees (empty: all 1), V and R.
inline pcg::ParallelShape pshape(std::vector<std::int64_t> dims, std::vector<std::int64_t> D = {}, std::int64_t V = 1, std::int64_t R = 1) {
  return pcg::ParallelShape::partitioned(std::move(dims), std::move(D), V, R);
}

// 1-based line and column of the `occurrence`-th (0-based) match of `needle` in `text`; fails the
// test when the snippet is not there (a mistake in the test itself).
struct Position {
  int line = 0;
  int column = 0;
};

inline Position locate(const std::string& text, const std::string& needle, int occurrence = 0) {
  std::size_t at = text.find(needle);
  for (int k = 0; k < occurrence && at != std::string::npos; ++k) at = text.find(needle, at + 1);
  if (at == std::string::npos) {
    ADD_FAILURE() << "test bug: '" << needle << "' not found in the spec text";
    return {};
  }
  Position p{1, 1};
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("loom_interp_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `text` to `relative` (creating folders) and returns the full path.
  std::string write(const std::string& relative, const std::string& text) const {
    auto p = path_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out << text;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

// Every diagnostic of a LoomError thrown by `f`; fails the test when nothing is thrown.
template <class F>
std::vector<Diagnostic> diagnostics_of(F&& f) {
  try {
    f();
  } catch (const LoomError& e) {
    return e.diagnostics();
  }
  ADD_FAILURE() << "expected a LoomError";
  return {};
}

inline std::string all_text(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) out += d.to_string() + "\n";
  return out;
}

// Whether AddressSanitizer instruments this build: it reserves terabytes of address space, so a
// cap on the address space would stop it rather than the code under test.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Runs `body` in a forked child process under a memory cap (none under AddressSanitizer) and a
// time limit, so that a crash, a
// hang or a runaway allocation in the code under test fails one test instead of the whole binary.
// Returns the child's exit code (what `body` returned; 101 for an exception other than LoomError
// escaping `body`), or minus the signal that ended it (-SIGSEGV for a crash, -SIGALRM for a timeout).
inline int run_isolated(const std::function<int()>& body, unsigned seconds = 10, rlim_t memory_bytes = rlim_t{2} << 30) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return -1000;
  }
  if (pid == 0) {
    if (!kAddressSanitizer) {
      rlimit limit{memory_bytes, memory_bytes};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    ::alarm(seconds);
    int code = 101;
    try {
      code = body();
    } catch (...) {
      code = 101;
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1001;
}

inline std::string isolated_outcome(int code) {
  if (code == -SIGSEGV) return "crashed (SIGSEGV)";
  if (code == -SIGABRT) return "aborted (SIGABRT)";
  if (code == -SIGALRM) return "did not finish in time";
  if (code < 0) return "killed by signal " + std::to_string(-code);
  if (code == 101) return "threw something other than LoomError";
  return "exit code " + std::to_string(code);
}

}  // namespace loom::spec::test

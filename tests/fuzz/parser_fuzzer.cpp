// libFuzzer target: any byte string given to the parser and checker either loads or fails with
// diagnostics; it never crashes, hangs or leaks.
#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/interpreter/library.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto library = loom::spec::Library::from_text(text, "fuzz.loom", "/nonexistent");
    (void)library.ops().size();
  } catch (const loom::LoomError& e) {
    // Every rejection must say where and why: a file name and a message on each diagnostic.
    if (e.diagnostics().empty()) __builtin_trap();
    for (const auto& d : e.diagnostics())
      if (d.where.file.empty() || d.message.empty()) __builtin_trap();
  }
  return 0;
}

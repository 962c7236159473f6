// libFuzzer target for ONNX files: any byte string given to the importer either becomes a graph or
// fails with a LoomError that says what is wrong; it never crashes, hangs or throws anything else.
// External data is looked up in a folder that does not exist, and the importer refuses absolute
// or climbing locations, so no input can make it read a file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/interpreter/library.hpp"
#include "loom/models/onnx_import.hpp"

namespace {

const loom::spec::Library& bundled() {
  static const loom::spec::Library library = loom::spec::Library::load({loom::spec::Library::default_specs_dir()});
  return library;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto imported = loom::models::import_onnx_bytes(bytes, "fuzz.onnx", bundled(), {}, "/nonexistent");
    (void)imported.graph.nodes().size();
  } catch (const loom::LoomError& e) {
    if (std::string(e.what()).find("fuzz.onnx") == std::string::npos) __builtin_trap();
  }
  return 0;
}

// libFuzzer target for the JSON files Loom reads: any byte string given to the readers of PCGs,
// rule libraries, plans and machine files either loads or fails with a LoomError that says where
// and why; it never crashes, hangs or throws anything else.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph_json.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/plan.hpp"

namespace {

const loom::spec::Library& bundled() {
  static const loom::spec::Library library = loom::spec::Library::load({loom::spec::Library::default_specs_dir()});
  return library;
}

template <class Read>
void expect_load_or_message(Read&& read) {
  try {
    read();
  } catch (const loom::LoomError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;  // not JSON: the readers are given parsed JSON
  expect_load_or_message([&] { (void)loom::pcg::graph_from_json(j, bundled()); });
  expect_load_or_message([&] { (void)loom::pcg::rule_library_from_json(j, bundled()); });
  expect_load_or_message([&] { (void)loom::search::plan_from_json(j, bundled()); });
  expect_load_or_message([&] { (void)loom::search::machine_from_json(j); });
  return 0;
}

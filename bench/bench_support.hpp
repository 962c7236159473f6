#pragma once
// What the benchmarks share: the bundled spec library and its Unity rules, loaded once.
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::bench {

inline const spec::Library& library() {
  static const spec::Library lib = spec::Library::load({spec::Library::default_specs_dir()});
  return lib;
}

inline const std::vector<pcg::Rule>& unity_rules() {
  static const std::vector<pcg::Rule> rules =
      spec::load_rule_file(library(), {spec::Library::default_specs_dir()}, spec::Library::default_specs_dir() + "/rules/unity.loom");
  return rules;
}

}  // namespace loom::bench

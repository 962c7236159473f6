#pragma once
// What the search tests share: the bundled library, its Unity rules, unsplit shapes.
#include <cstdint>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::search::test_support {

inline const spec::Library& library() {
  static spec::Library lib = spec::Library::load({spec::Library::default_specs_dir()});
  return lib;
}

inline const std::vector<pcg::Rule>& unity_rules() {
  static const std::vector<pcg::Rule> rules =
      spec::load_rule_file(library(), {spec::Library::default_specs_dir()}, spec::Library::default_specs_dir() + "/rules/unity.loom");
  return rules;
}

inline pcg::ParallelShape shape(std::vector<std::int64_t> dims) { return pcg::ParallelShape::unpartitioned(std::move(dims)); }

}  // namespace loom::search::test_support

#pragma once
// What the search tests share: the bundled library, its Unity rules, unsplit shapes, a node's
// sums figures, and the values two graphs compute on the same random inputs.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/machine.hpp"

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

// `machine` with the sums within a node measured: waited in at `waited`, started beside other work at `started`.
inline Machine with_node_sums(Machine machine, SumRate waited, SumRate started) {
  for (Link* link : {&machine.intra_socket, &machine.inter_socket}) {
    link->allreduce = waited;
    link->started_allreduce = started;
  }
  return machine;
}

// The outputs of `before` and of `after`, on one draw of random values in [-1, 1) for the graph
// inputs of `before` (which `after` reads by name).
inline std::pair<std::vector<spec::Tensor<double>>, std::vector<spec::Tensor<double>>> outputs_on_random_inputs(const pcg::Graph& before,
                                                                                                                const pcg::Graph& after,
                                                                                                                std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(-1, 1);
  std::map<std::string, spec::Tensor<double>> values;
  for (const auto& n : before.nodes()) {
    if (!n.is_graph_input()) continue;
    spec::Tensor<double> t(n.output_shapes[0].dims);
    for (auto& v : t.data) v = uni(rng);
    values[n.name] = t;
  }
  return {spec::evaluate_graph<spec::RealDomain>(library(), before, values),
          spec::evaluate_graph<spec::RealDomain>(library(), after, values)};
}

}  // namespace loom::search::test_support

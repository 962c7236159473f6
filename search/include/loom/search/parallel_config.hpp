#pragma once
// How one compute operator of a graph is split over tasks: the parallel shapes its inputs must
// arrive in and the shapes it then produces. The choices are derived from the operator's
// comprehension (DESIGN.md section 2), so an operator written in the spec language is
// parallelizable without any C++.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::search {

struct ParallelConfig {
  std::vector<pcg::ParallelShape> inputs;   // the shape each input must arrive in
  std::vector<pcg::ParallelShape> outputs;  // what the operator then produces
  std::string split;                        // e.g. "input 0 dim 1 / 4", or "" when not split

  std::int64_t tasks() const { return outputs.empty() ? 1 : outputs[0].tasks(); }
  std::int64_t degree() const;
  bool operator==(const ParallelConfig&) const = default;
};

// The node unsplit: its inputs and outputs as the graph has them.
ParallelConfig unsplit_config(const pcg::Graph& graph, const pcg::Node& node);

// The node's configurations: unsplit first, then every input dimension (with the dimensions that
// share its index) split by each of `degrees` that the operator accepts, each distinct split once.
std::vector<ParallelConfig> node_configs(const spec::Library& library, const pcg::Graph& graph, const pcg::Node& node,
                                         const std::vector<std::int64_t>& degrees);

// The split degrees worth trying on `devices` devices: every divisor above 1.
std::vector<std::int64_t> divisor_degrees(int devices);

}  // namespace loom::search

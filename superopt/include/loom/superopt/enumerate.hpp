#pragma once
// Enumeration of every well-typed graph of up to `max_ops` operator instances over the inputs
// (TASO's generator, with parallel forms and degrees): graphs are built one operator at a time,
// each distinct graph (up to the order of its steps) once; an operator that recomputes an
// existing node is skipped. Graphs with one sink become candidates, one per output port of the
// sink, fingerprinted on the fixed random inputs; the inputs themselves are candidates too. With
// two_outputs, graphs with two sinks, and sinks with several ports, also become candidates once
// per ordered pair of outputs, fingerprinted as the pair.
#include <cstdint>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/superopt/encoded_graph.hpp"
#include "loom/superopt/op_set.hpp"
#include "loom/superopt/options.hpp"
#include "loom/superopt/progress.hpp"

namespace loom::superopt {

struct Enumeration {
  std::vector<GraphView> views;             // candidates, in canonical step order
  std::vector<std::uint64_t> fingerprints;  // per view, truncated to the requested bits
  std::size_t graphs = 0;                   // distinct well-typed graphs of 1..max_ops operators
  std::vector<std::size_t> graphs_by_size;  // [n]: graphs of n operators
};

// Deterministic: the same options give the same views in the same order, whatever `jobs`.
Enumeration enumerate_graphs(const spec::Library& library, const OpSet& ops, const std::vector<InputTensor>& inputs,
                             const GeneratorOptions& options, const ProgressFn& progress = {});

}  // namespace loom::superopt

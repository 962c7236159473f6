#pragma once
// How the operators of a graph run on the CPU: a hand-written kernel, compiled from the operator's
// spec (where the toolchain can), or interpreted. For views that show a model before it runs.
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::runtime {

struct KernelRoutes {
  std::vector<std::string> native, compiled, interpreted;  // distinct operator names, sorted
};

// Graph inputs and layout changes (parallel and fused forms) are left out.
KernelRoutes kernel_routes(const spec::Library& library, const pcg::Graph& graph);

}  // namespace loom::runtime

#include "loom/runtime/kernel_routes.hpp"

#include <set>

#include "loom/interpreter/native_program.hpp"
#include "loom/runtime/kernel_registry.hpp"

namespace loom::runtime {

KernelRoutes kernel_routes(const spec::Library& library, const pcg::Graph& graph) {
  std::set<std::string> native, compiled, interpreted;
  const bool compiler = !spec::NativeToolchain::from_environment().compiler.empty();
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input() || library.find_parallel(n.op) || library.find_fused(n.op)) continue;
    if (builtin_kernels().find<float>(n.op, Backend::Cpu))
      native.insert(n.op);
    else
      (compiler ? compiled : interpreted).insert(n.op);
  }
  return {{native.begin(), native.end()}, {compiled.begin(), compiled.end()}, {interpreted.begin(), interpreted.end()}};
}

}  // namespace loom::runtime

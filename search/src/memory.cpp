#include "loom/search/memory.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/task_layout.hpp"

namespace loom::search {

std::vector<double> memory_per_device(const pcg::Graph& graph, const Machine& machine, const MemoryOptions& options) {
  std::vector<double> bytes(static_cast<std::size_t>(machine.devices()), 0);
  // A weight, or a piece of one a parallelization operator made from it directly.
  std::vector<bool> weight(graph.size(), false);
  std::vector<bool> held_by_consumers(graph.size(), false);
  for (const pcg::Node& n : graph.nodes()) {
    weight[n.id.index()] = n.op == pcg::kWeightOp;
    if (!options.moves_data) continue;
    if (options.moves_data(n) && n.inputs.size() == 1 && graph.node(n.inputs[0].node).is_graph_input())
      weight[n.id.index()] = weight[n.inputs[0].node.index()];
    if (n.is_graph_input()) {
      const std::vector<pcg::NodeId> readers = graph.consumers(n.id);
      held_by_consumers[n.id.index()] =
          !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](pcg::NodeId r) { return options.moves_data(graph.node(r)); });
    }
  }
  std::vector<double> largest_recomputed(bytes.size(), 0);
  // A recomputed operator's output, and the layout changes made of it, are computed again too.
  std::vector<bool> dropped(graph.size(), false);
  for (const pcg::Node& n : graph.nodes()) {
    if (held_by_consumers[n.id.index()]) continue;
    dropped[n.id.index()] = std::find(options.recomputed.begin(), options.recomputed.end(), n.id) != options.recomputed.end() ||
                            (options.moves_data && options.moves_data(n) && n.inputs.size() == 1 && dropped[n.inputs[0].node.index()]);
    const bool recomputed = dropped[n.id.index()];
    const pcg::MachineView view = n.view ? *n.view : pcg::MachineView::contiguous(0, n.tasks());
    const bool is_weight = weight[n.id.index()];
    const double copies = is_weight ? 1 + options.weight_state_copies : 1;
    for (const pcg::ParallelShape& s : n.output_shapes) {
      const double piece = static_cast<double>(pcg::piece_elements(s)) * options.bytes_per_element * copies;
      for (std::size_t t = 0; t < static_cast<std::size_t>(s.tasks()) && t < view.devices.size(); ++t) {
        const int d = view.devices[t];
        if (d < 0 || d >= machine.devices())
          throw LoomError(n.describe() + ": its machine view uses device " + std::to_string(d) + ", but " + machine.name + " has " +
                          std::to_string(machine.devices()) + " devices");
        const bool repeated = !is_weight && !options.activation_copies.empty();
        if (recomputed)
          largest_recomputed[static_cast<std::size_t>(d)] = std::max(largest_recomputed[static_cast<std::size_t>(d)], piece);
        else
          bytes[static_cast<std::size_t>(d)] += repeated ? piece * options.activation_copies[static_cast<std::size_t>(d)] : piece;
      }
    }
  }
  for (std::size_t d = 0; d < bytes.size(); ++d) bytes[d] += largest_recomputed[d];
  return bytes;
}

int first_overfull_device(const std::vector<double>& bytes, const Machine& machine) {
  for (std::size_t d = 0; d < bytes.size(); ++d)
    if (bytes[d] > machine.device.memory_bytes) return static_cast<int>(d);
  return -1;
}

}  // namespace loom::search

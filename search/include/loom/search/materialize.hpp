#pragma once
// From a graph of unsplit operators and a choice of split and devices for each of them to the
// PCG that runs it: the parallelization operators that move every value from the shape its
// producer gives to the shape each consumer needs, and a machine view on every node.
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/parallel_config.hpp"
#include "loom/search/rvd_search.hpp"

namespace loom::search {

// Where one operator runs: split as `config`, its tasks on `devices` when given (task k on
// devices[k]), else on devices first_device, first_device + 1, ...
struct Placement {
  ParallelConfig config;
  int first_device = 0;
  std::vector<int> devices{};

  pcg::MachineView view() const {
    return devices.empty() ? pcg::MachineView::contiguous(first_device, config.tasks()) : pcg::MachineView{devices};
  }
  bool operator==(const Placement&) const = default;
};

// `placements` is indexed by node id; graph inputs keep their shape and sit on the first device of
// their first reader. Graph
// outputs are brought back to the shapes `graph` gives them, so the result computes the same
// values in the same shapes. Throws LoomError naming the node when a value cannot be moved to
// the shape a consumer needs. Each move is the cheapest chain of the library's parallel and fused
// forms that `moves` finds (a cost model's: CostModel::moves); without it, on a machine whose
// devices are all joined by equal links (even_machine).
pcg::Graph materialize(const pcg::Graph& graph, const std::vector<Placement>& placements, const spec::Library& library,
                       const RvdSearch& moves);
pcg::Graph materialize(const pcg::Graph& graph, const std::vector<Placement>& placements, const spec::Library& library);

// One socket of as many devices as the placements use, every pair joined by the same link.
Machine even_machine(const std::vector<Placement>& placements);

// Every node of `graph` unsplit on device 0: the placements of the graph as given.
std::vector<Placement> unsplit_placements(const pcg::Graph& graph);

}  // namespace loom::search

#pragma once
// Co-shard, as SuperScaler plans it: an operator cut into more pieces than it has devices, the
// pieces sharing a device run in turn. With recomputation, a device computes again and holds one
// piece of the dropped values at a time (search::piecewise_regions), which is how it saves memory.
#include <cstddef>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/search/materialize.hpp"

namespace loom::search {

// `placements` (per node of `graph`) with every operator that can be cut `pieces_per_device` times
// finer along the dimension its placement splits (an unsplit one along the first dimension its spec
// lets split so) cut so, each former piece's pieces in turn on its device. The others keep their
// placements. `coshards`, when given, receives how many operators were cut finer.
std::vector<Placement> coshard_placements(const spec::Library& library, const pcg::Graph& graph, const std::vector<Placement>& placements,
                                          int pieces_per_device, std::size_t* coshards = nullptr);

}  // namespace loom::search

#pragma once
// Moving a value from the parallel shape its producer gives to the one a consumer needs: the
// parallelization operators that do it, and what it costs on a machine.
#include <optional>
#include <string>
#include <vector>

#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/search/machine.hpp"

namespace loom::search {

struct ReshardStep {
  std::string op;  // partition, combine, replicate, reduce or all_to_all
  pcg::AttrMap attrs;
};

// The operators, in order, that turn a value held as `from` into `to`: partial sums reduced, then
// a split moved from one dimension to another as one all-to-all, or else partitions combined,
// copies made, and partitions split. Nothing when the shapes are equal;
// nullopt when no chain can do it (fewer copies or more partial sums than `from` holds, or
// pipeline degrees that differ).
std::optional<std::vector<ReshardStep>> reshard_steps(const pcg::ParallelShape& from, const pcg::ParallelShape& to);

// Seconds the move takes forward: every receiving task gathers the pieces it overlaps from the
// nearest holder, each directed device pair a link of its own working in parallel, then partial
// sums are added up where they arrive. Infinity when reshard_steps has no chain.
double reshard_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                       const pcg::MachineView& to_view, const Machine& machine);

}  // namespace loom::search

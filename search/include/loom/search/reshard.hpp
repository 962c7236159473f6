#pragma once
// What one layout change costs on a machine: the parallelization operator or fused form that
// turns a value held as one parallel shape into another, as the runtime runs it.
#include <optional>

#include "loom/pcg/collective_groups.hpp"
#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/search/machine.hpp"

namespace loom::search {

// Whether some chain of layout changes could turn a value held as `from` into `to`: not when it
// would need fewer copies or more partial sums than `from` holds, or other pipeline degrees.
bool reshardable(const pcg::ParallelShape& from, const pcg::ParallelShape& to);

// Bytes of the box each device of a collective works over: its new piece for an all-gather, its
// old piece otherwise.
double collective_box_bytes(pcg::Collective kind, const pcg::ParallelShape& from, const pcg::ParallelShape& to);

// Seconds one group of a collective takes over the slowest link between its devices: an allreduce
// sums the whole piece as a ring in 2(k-1) steps; a reduce-scatter or an all-gather is half of
// that over the box its pieces split; in an all-to-all each device sends k - 1 of its piece's k
// blocks, one message to each other device.
double collective_seconds(const pcg::CollectiveGroups& collective, const pcg::CollectiveGroup& group, const pcg::ParallelShape& from,
                          const pcg::ParallelShape& to, const Machine& machine);

// Seconds the change takes forward. Where its pieces move as one collective (change_collective),
// the slowest group's collective, as the runtime runs it; else every receiving task gathers the
// pieces it overlaps from the nearest holder, each directed device pair a link of its own working
// in parallel, then partial sums are added up where they arrive. Infinity when the change is not
// reshardable.
double reshard_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                       const pcg::MachineView& to_view, const Machine& machine);

}  // namespace loom::search

#pragma once
// What one layout change costs on a machine: the parallelization operator or fused form that
// turns a value held as one parallel shape into another, as the runtime runs it.
#include <optional>
#include <utility>
#include <vector>

#include "loom/pcg/collective_groups.hpp"
#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/port_loads.hpp"

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
// blocks, one message to each other device, and between nodes no faster than its busiest
// network port carries its blocks one after another (ReshardPattern::Group::seconds).
double collective_seconds(const pcg::CollectiveGroups& collective, const pcg::CollectiveGroup& group, const pcg::ParallelShape& from,
                          const pcg::ParallelShape& to, const Machine& machine);

// Seconds one collective of `devices` devices over `link` takes on boxes of `box_bytes`, each
// device over a link of its own.
double collective_seconds(pcg::Collective kind, int devices, const Link& link, double box_bytes);

// What a layout change moves, apart from how large the value is: the collective its pieces move
// as (per group, its count of devices, the slowest link between them and how many ring steps take
// turns at the busiest network port on its way), else per kind of link within a node the most
// elements one directed pair of devices sends over it, and between nodes what each network port
// sends or receives (port_loads.hpp). Worked out on one value and
// priced on another of the same degrees and views (seconds): where the pieces of both layouts
// divide every dimension evenly, each piece and each overlap of two pieces is the same fraction
// of the value whatever its size, so the pattern worked out on evenly_divided_shapes prices them all.
struct ReshardPattern {
  struct Group {
    int devices = 0;
    Link link;
    int turns = 1;        // the group's ring takes this many times as long: its busiest port is shared
    int port_blocks = 0;  // an all-to-all's: the most blocks one network port carries
    // Seconds its collective takes on boxes of `box_bytes`, its ring alone (before `turns`): over
    // its slowest link, and for an all-to-all no faster than its busiest port sends its blocks,
    // each a message over the machine's `inter_node` link.
    double seconds(pcg::Collective kind, double box_bytes, const Machine& machine) const;
  };
  bool reshardable = false;
  bool nothing_moves = false;  // the same layout on the same devices
  std::optional<pcg::Collective> collective;
  std::vector<Group> groups;                           // a collective's
  std::vector<std::pair<Link, double>> link_elements;  // point to point within nodes: per kind of link, the most elements a pair sends
  std::vector<PortLoad> port_loads;                    // point to point between nodes: per network port and direction used
  double elements = 0;                                 // of the value it was worked out on

  // What the change takes forward for a value held as `from` and wanted as `to`.
  double seconds(const pcg::ParallelShape& from, const pcg::ParallelShape& to, const Machine& machine) const;
};

ReshardPattern reshard_pattern(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                               const pcg::MachineView& to_view, const Machine& machine);

// `from` and `to` at the least dimensions of the same degrees (each the least common multiple of
// the two layouts' pieces along it), when every dimension divides evenly among both; else nullopt.
std::optional<std::pair<pcg::ParallelShape, pcg::ParallelShape>> evenly_divided_shapes(const pcg::ParallelShape& from,
                                                                                       const pcg::ParallelShape& to);

// Seconds the change takes forward. Where its pieces move as one collective (change_collective),
// the slowest group's collective, as the runtime runs it, as many times over as ring steps take
// turns at a network port on its way; else every receiving task gathers the pieces it overlaps
// from the nearest holder, each directed device pair within a node a link of its own working in
// parallel and each network port between nodes sending and receiving one message at a time (a
// latency each), then partial sums are added up where they arrive. Infinity when the change is
// not reshardable.
double reshard_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                       const pcg::MachineView& to_view, const Machine& machine);

}  // namespace loom::search

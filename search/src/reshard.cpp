#include "loom/search/reshard.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"

namespace loom::search {

bool reshardable(const pcg::ParallelShape& from, const pcg::ParallelShape& to) {
  return from.dims == to.dims && from.P == to.P && to.V <= from.V && from.V % to.V == 0 && to.R >= from.R && to.R % from.R == 0;
}

double collective_box_bytes(pcg::Collective kind, const pcg::ParallelShape& from, const pcg::ParallelShape& to) {
  return static_cast<double>(pcg::piece_elements(kind == pcg::Collective::all_gather ? to : from)) * kBytesPerElement;
}

double collective_seconds(const pcg::CollectiveGroups& collective, const pcg::CollectiveGroup& group, const pcg::ParallelShape& from,
                          const pcg::ParallelShape& to, const Machine& machine) {
  const int k = static_cast<int>(group.ranks.size());
  if (k < 2) return 0;
  const Link& link = machine.link_between(group.ranks.front(), group.ranks.back());
  const double bytes = collective_box_bytes(collective.kind, from, to);
  if (collective.kind == pcg::Collective::all_to_all)  // each device sends k - 1 of its k blocks
    return (k - 1) * link.latency + (k - 1.0) / k * bytes / link.bandwidth;
  const double ring = link.ring_allreduce_seconds(bytes, k);
  return collective.kind == pcg::Collective::allreduce ? ring : ring / 2;
}

double reshard_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                       const pcg::MachineView& to_view, const Machine& machine) {
  if (!reshardable(from, to)) return std::numeric_limits<double>::infinity();
  if (from == to && from_view == to_view) return 0;
  const std::vector<pcg::PieceMove> moves = pcg::piece_moves(from, from_view, to, to_view);
  const auto from_rank = [&](std::int64_t t) { return from_view.devices[static_cast<std::size_t>(t)]; };
  const auto to_rank = [&](std::int64_t t) { return to_view.devices[static_cast<std::size_t>(t)]; };
  // A collective has one old and one new piece on each of its devices: as many of each, on the
  // same devices.
  const auto devices = [](const pcg::MachineView& v) {
    std::vector<int> d = v.devices;
    std::sort(d.begin(), d.end());
    return d;
  };
  const bool may_be_collective = from.tasks() == to.tasks() && devices(from_view) == devices(to_view);
  if (const auto collective = may_be_collective ? pcg::collective_groups(from, to, moves, from_rank, to_rank) : std::nullopt) {
    double slowest = 0;
    for (const pcg::CollectiveGroup& g : collective->groups)
      slowest = std::max(slowest, collective_seconds(*collective, g, from, to, machine));
    return slowest;
  }
  std::map<std::pair<int, int>, double> pair_bytes;
  for (const pcg::PieceMove& m : moves) {
    const int source = from_rank(m.from), device = to_rank(m.to);
    if (source != device) pair_bytes[{source, device}] += static_cast<double>(m.region.elements()) * kBytesPerElement;
  }
  double sum_seconds = 0;
  if (from.V > to.V) {  // every receiving device reads its partial pieces and writes their sum
    const double bytes = static_cast<double>((from.V / to.V + 1) * pcg::piece_elements(to)) * kBytesPerElement;
    sum_seconds = bytes / machine.device.memory_bandwidth + machine.device.kernel_overhead;
  }
  double move_seconds = 0;
  for (const auto& [pair, bytes] : pair_bytes)
    move_seconds = std::max(move_seconds, machine.link_between(pair.first, pair.second).transfer_seconds(bytes));
  return move_seconds + sum_seconds;
}

}  // namespace loom::search

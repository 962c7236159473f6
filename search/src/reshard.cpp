#include "loom/search/reshard.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"
#include "loom/search/port_loads.hpp"

namespace loom::search {

bool reshardable(const pcg::ParallelShape& from, const pcg::ParallelShape& to) {
  return from.dims == to.dims && from.P == to.P && to.V <= from.V && from.V % to.V == 0 && to.R >= from.R && to.R % from.R == 0;
}

double collective_box_bytes(pcg::Collective kind, const pcg::ParallelShape& from, const pcg::ParallelShape& to) {
  return static_cast<double>(pcg::piece_elements(kind == pcg::Collective::all_gather ? to : from)) * kBytesPerElement;
}

double collective_seconds(pcg::Collective kind, int devices, const Link& link, double box_bytes) {
  const int k = devices;
  if (k < 2) return 0;
  if (kind == pcg::Collective::all_to_all)  // each device sends k - 1 of its k blocks
    return (k - 1) * link.transfer_seconds(box_bytes / k);
  const double ring = link.ring_allreduce_seconds(box_bytes, k);
  return kind == pcg::Collective::allreduce ? ring : ring / 2;
}

double collective_seconds(const pcg::CollectiveGroups& collective, const pcg::CollectiveGroup& group, const pcg::ParallelShape& from,
                          const pcg::ParallelShape& to, const Machine& machine) {
  if (group.ranks.size() < 2) return 0;
  const ReshardPattern::Group g{
      static_cast<int>(group.ranks.size()), machine.link_between(group.ranks.front(), group.ranks.back()), 1,
      collective.kind == pcg::Collective::all_to_all ? all_to_all_port_blocks(machine.network_ports(), group.ranks) : 0};
  return g.seconds(collective.kind, collective_box_bytes(collective.kind, from, to), machine);
}

double ReshardPattern::Group::seconds(pcg::Collective kind, double box_bytes, const Machine& machine) const {
  const double own_links = collective_seconds(kind, devices, link, box_bytes);
  if (port_blocks == 0 || devices < 1) return own_links;
  return std::max(own_links, port_blocks * machine.inter_node.transfer_seconds(box_bytes / devices));
}

ReshardPattern reshard_pattern(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                               const pcg::MachineView& to_view, const Machine& machine) {
  ReshardPattern pattern;
  pattern.reshardable = reshardable(from, to);
  pattern.elements = static_cast<double>(from.elements());
  if (!pattern.reshardable) return pattern;
  if (from == to && from_view == to_view) {
    pattern.nothing_moves = true;
    return pattern;
  }
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
    pattern.collective = collective->kind;
    std::vector<std::vector<int>> rings;
    for (const pcg::CollectiveGroup& g : collective->groups)
      if (g.ranks.size() > 1) rings.push_back(g.ranks);
    const std::vector<int> turns = ring_port_turns(machine.network_ports(), rings);
    std::set<std::tuple<int, const Link*, int, int>> seen;  // (devices, link, turns, port blocks) of the groups kept
    for (std::size_t i = 0; i < rings.size(); ++i) {
      const int devices = static_cast<int>(rings[i].size());
      const Link& link = machine.link_between(rings[i].front(), rings[i].back());
      const int port_blocks =
          collective->kind == pcg::Collective::all_to_all ? all_to_all_port_blocks(machine.network_ports(), rings[i]) : 0;
      if (seen.emplace(devices, &link, turns[i], port_blocks).second) pattern.groups.push_back({devices, link, turns[i], port_blocks});
    }
    return pattern;
  }
  std::map<std::pair<int, int>, double> pair_elements;  // within a node
  PortLoads ports(machine.network_ports());
  for (const pcg::PieceMove& m : moves) {
    const int source = from_rank(m.from), device = to_rank(m.to);
    if (source == device) continue;
    if (machine.node_of(source) != machine.node_of(device))
      ports.add(source, device, static_cast<double>(m.region.elements()));
    else
      pair_elements[{source, device}] += static_cast<double>(m.region.elements());
  }
  pattern.port_loads = ports.distinct();
  std::map<const Link*, double> most;
  for (const auto& [pair, elements] : pair_elements) {
    double& m = most[&machine.link_between(pair.first, pair.second)];
    m = std::max(m, elements);
  }
  for (const auto& [link, elements] : most) pattern.link_elements.push_back({*link, elements});
  return pattern;
}

double ReshardPattern::seconds(const pcg::ParallelShape& from, const pcg::ParallelShape& to, const Machine& machine) const {
  if (!reshardable) return std::numeric_limits<double>::infinity();
  if (nothing_moves) return 0;
  if (collective) {
    double slowest = 0;
    const double box_bytes = collective_box_bytes(*collective, from, to);
    for (const Group& g : groups) slowest = std::max(slowest, g.turns * g.seconds(*collective, box_bytes, machine));
    return slowest;
  }
  double sum_seconds = 0;
  if (from.V > to.V) {  // every receiving device reads its partial pieces and writes their sum
    const double bytes = static_cast<double>((from.V / to.V + 1) * pcg::piece_elements(to)) * kBytesPerElement;
    sum_seconds = bytes / machine.device.memory_bandwidth + machine.device.kernel_overhead;
  }
  const double scale = elements > 0 ? static_cast<double>(from.elements()) / elements : 0;
  double move_seconds = 0;
  for (const auto& [link, pattern_elements] : link_elements)
    move_seconds = std::max(move_seconds, link.transfer_seconds(pattern_elements * scale * kBytesPerElement));
  // A port's load is many messages of other sizes at once: priced by its link's line, not by
  // the sizes measured one message at a time.
  for (const PortLoad& load : port_loads)
    move_seconds = std::max(
        move_seconds, load.messages * machine.inter_node.latency + load.elements * scale * kBytesPerElement / machine.inter_node.bandwidth);
  return move_seconds + sum_seconds;
}

std::optional<std::pair<pcg::ParallelShape, pcg::ParallelShape>> evenly_divided_shapes(const pcg::ParallelShape& from,
                                                                                       const pcg::ParallelShape& to) {
  if (from.dims != to.dims || from.D.size() != from.dims.size() || to.D.size() != to.dims.size() || from.P != to.P ||
      from.P.size() != from.dims.size())
    return std::nullopt;
  std::pair<pcg::ParallelShape, pcg::ParallelShape> out{from, to};
  for (std::size_t i = 0; i < from.dims.size(); ++i) {
    const std::int64_t least = std::lcm(from.D[i] * from.P[i], to.D[i] * to.P[i]);
    if (least <= 0 || from.dims[i] <= 0 || from.dims[i] % least != 0) return std::nullopt;
    out.first.dims[i] = out.second.dims[i] = least;
  }
  return out;
}

double reshard_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                       const pcg::MachineView& to_view, const Machine& machine) {
  return reshard_pattern(from, from_view, to, to_view, machine).seconds(from, to, machine);
}

}  // namespace loom::search

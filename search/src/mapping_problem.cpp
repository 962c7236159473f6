#include "mapping_problem.hpp"

#include <algorithm>
#include <bit>

#include <absl/container/inlined_vector.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/graph_split.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/plan_cost.hpp"

namespace loom::search {

using namespace mapping;

std::vector<int> mapping::split_sizes_of(int count) {
  std::vector<int> out;
  for (int parts : {2, 3, 4})
    if (count % parts == 0)
      for (int i = 1; i < parts; ++i) out.push_back(count / parts * i);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::size_t mapping::ChoicesKeyHash::operator()(const ChoicesKey& k) const {
  return static_cast<std::size_t>(hash_of_block(k.kind, k.first, k.count, k.memory_scale));
}

MachineMapper::Impl::Impl(const spec::Library& library, const CostModel& model, MappingOptions opts)
    : library(library),
      model(model),
      machine(model.machine()),
      options(std::move(opts)),
      moves(model.moves()),
      config_table(library, model, options, moves.shapes()) {
  if (options.degrees.empty()) options.degrees = mapping_degrees(machine);
}

int MachineMapper::Impl::prepare(const pcg::Graph& graph, const Pins& pinned) {
  g = MappedGraph{&graph, pinned, std::vector<std::vector<int>>(graph.size()), std::vector<int>(graph.size(), -1)};
  trees.clear();
  configs.assign(graph.size(), nullptr);
  fixed.assign(graph.size(), Choice{});
  for (const pcg::Node& n : graph.nodes())
    for (pcg::PortRef in : n.inputs) {
      auto& list = g.consumers[in.node.index()];
      if (list.empty() || list.back() != n.id) list.push_back(n.id);
    }
  std::vector<int> members;
  // A segment after the first reads the values before it through inputs of its own: nodes
  // before it may run their backward after its own.
  ends_backward =
      std::any_of(graph.nodes().begin(), graph.nodes().end(), stands_for_another_segments_value) ? static_cast<int>(graph.size()) : -1;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input()) continue;
    const ConfigTable::Kind* kind = &config_table.kind_of(graph, n);
    if (ends_backward < 0 && kind->takes_gradients && kind->configs.front().backward_seconds > 0) {
      ends_backward = n.id;
      kind = &config_table.kind_of(graph, n, true);
    }
    configs[n.id.index()] = &kind->configs;
    g.signature_id[n.id.index()] = kind->id;
    members.push_back(n.id);
  }
  double total = 0;
  for (int m : members) total += configs[static_cast<std::size_t>(m)]->front().memory;
  memory_scale = total > machine.device.memory_bytes ? machine.device.memory_bytes / total : 1;
  if (!options.share_cache || !memo.settled()) {
    memo.clear();
    choices_of.clear();
  }
  return members.empty() ? -1 : decompose(g, std::move(members), contents, trees);
}

const std::vector<Choice>& MachineMapper::Impl::choices(int node, Resource r) {
  const ChoicesKey key{g.signature_id[static_cast<std::size_t>(node)], r.first, r.count, std::bit_cast<std::uint64_t>(memory_scale)};
  if (auto it = choices_of.find(key); it != choices_of.end()) return it->second;
  std::vector<Choice> out;
  const auto& list = *configs[static_cast<std::size_t>(node)];
  const double limit = memory_limit(list);
  std::vector<int> offsets;
  for (std::size_t c = 0; c < list.size(); ++c) {
    const int tasks = static_cast<int>(list[c].config.tasks());
    if (tasks > r.count || list[c].memory > limit) continue;
    offsets.clear();  // the multiples of `tasks` from which its tasks fit in r
    for (int o = (r.first + tasks - 1) / tasks * tasks; o + tasks <= r.first + r.count; o += tasks) offsets.push_back(o);
    if (offsets.empty()) offsets.push_back(r.first);
    const std::size_t keep = std::min(options.max_views, offsets.size());
    for (std::size_t k = 0; k < keep; ++k) out.push_back({static_cast<int>(c), offsets[k * offsets.size() / keep]});
  }
  return choices_of.emplace(key, std::move(out)).first->second;
}

// What one task of the node may keep. When the whole graph does not fit on one device, each node
// gets its share of a device in proportion to what it needs unsplit: a device then holds at most
// one task of each node, so the shares add up to no more than the device. (Copied weights do not
// shrink with a split; the simulated plan's memory is checked in the end.)
double MachineMapper::Impl::memory_limit(const std::vector<ConfigInfo>& list) const {
  if (memory_scale >= 1) return machine.device.memory_bytes;
  double least = list.front().memory;
  for (const ConfigInfo& c : list) least = std::min(least, c.memory);
  // A node that cannot get down to its share takes its smallest split.
  return std::min(machine.device.memory_bytes, std::max(list.front().memory * memory_scale, least));
}

double MachineMapper::Impl::leaf_cost(int node, Choice c) {
  const pcg::Graph& graph = *g.graph;
  const pcg::Node& n = graph.node(node);
  const ConfigInfo& mine = info(node, c);
  double cost = mine.seconds;
  absl::InlinedVector<int, 4> summed;  // the trained weights' shapes this task needs
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    const pcg::PortRef in = n.inputs[i];
    const pcg::Node& p = graph.node(in.node);
    if (p.is_graph_input()) {
      if (p.op == pcg::kWeightOp && model.trains(graph, p)) summed.push_back(mine.inputs[i]);
      if (auto pin = g.pins.inputs.find(in.node); pin != g.pins.inputs.end())
        cost += moves.move(moves.shapes().id(pin->second.shape), pin->second.first_device, mine.inputs[i], c.first);
      continue;
    }
    const Choice pc = fixed[in.node.index()];
    if (pc.config < 0) continue;
    cost += moves.move(info(in.node, pc).outputs[static_cast<std::size_t>(in.port)], pc.first, mine.inputs[i], c.first);
    if (cost == kNoPlan) return kNoPlan;
  }
  // The sums of the node whose backward ends the pass have nothing left to run beside; the others
  // run beside the rest of the pass.
  if (!summed.empty())
    cost += node == ends_backward ? moves.weight_sums_seconds(summed, c.first, true)
                                  : moves.exposed_sum_seconds(moves.weight_sums_seconds(summed, c.first), mine.backward_seconds);
  for (std::size_t k = 0; k < graph.outputs().size(); ++k) {
    const pcg::PortRef o = graph.outputs()[k];
    if (o.node != node) continue;
    const int given = mine.outputs[static_cast<std::size_t>(o.port)];
    if (auto pin = g.pins.outputs.find(k); pin != g.pins.outputs.end())
      cost += moves.move(given, c.first, moves.shapes().id(pin->second.shape), pin->second.first_device);
    else if (mine.config.outputs[static_cast<std::size_t>(o.port)].V >
             1)  // the loss reads a graph output whole or in pieces, but never as partial sums
      cost += moves.move(given, c.first, moves.shapes().id(graph.shape_of(o)), c.first);
  }
  for (int m : g.consumers[static_cast<std::size_t>(node)]) {
    const Choice mc = fixed[static_cast<std::size_t>(m)];
    if (mc.config < 0) continue;
    const pcg::Node& consumer = graph.node(m);
    for (std::size_t i = 0; i < consumer.inputs.size(); ++i) {
      if (consumer.inputs[i].node != node) continue;
      cost += moves.move(mine.outputs[static_cast<std::size_t>(consumer.inputs[i].port)], c.first, info(m, mc).inputs[i], mc.first);
    }
    if (cost == kNoPlan) return kNoPlan;
  }
  return cost;
}

double MachineMapper::Impl::fullest_device_bytes(const std::vector<Choice>& chosen) const {
  std::vector<double> bytes(static_cast<std::size_t>(machine.devices()), 0);
  for (const pcg::Node& n : g.graph->nodes()) {
    const Choice c = chosen[n.id.index()];
    if (n.is_graph_input() || c.config < 0) continue;
    const ConfigInfo& i = info(n.id, c);
    for (int d = c.first; d < c.first + static_cast<int>(i.config.tasks()) && d < machine.devices(); ++d)
      bytes[static_cast<std::size_t>(d)] += i.kept;
  }
  return search::fullest_device_bytes(bytes);
}

bool MachineMapper::Impl::fits(const pcg::Graph& graph, const std::vector<Placement>& placements) const {
  try {
    return first_overfull_device(plan_memory(materialize(graph, placements, library, model.moves()), model), machine) < 0;
  } catch (const LoomError&) {
    return false;
  }
}

Mapping MachineMapper::Impl::result(const pcg::Graph& graph, const std::vector<Choice>& chosen, double estimate) const {
  Mapping m;
  m.estimate = estimate;
  for (const pcg::Node& n : graph.nodes()) {
    const Choice c = chosen[n.id.index()];
    if (n.is_graph_input() || c.config < 0)
      m.placements.push_back({unsplit_config(graph, n), 0});
    else
      m.placements.push_back({info(n.id, c).config, c.first});
  }
  return m;
}

}  // namespace loom::search

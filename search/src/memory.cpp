#include "loom/search/memory.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/pcg/task_layout.hpp"
#include "loom/pcg/union_find.hpp"
#include "loom/search/checked_view.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/graph_split.hpp"

namespace loom::search {

std::vector<bool> made_from_graph_inputs(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& moves_data) {
  std::vector<bool> made(graph.size(), false);
  for (const pcg::Node& n : graph.nodes())
    made[n.id.index()] = n.is_graph_input() || (moves_data && moves_data(n) && n.inputs.size() == 1 && made[n.inputs[0].node.index()]);
  return made;
}

std::vector<std::vector<pcg::NodeId>> piecewise_regions(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& moves_data,
                                                        const std::vector<bool>& dropped) {
  // Co-sharded operators: some device runs more than one of its pieces.
  std::vector<bool> coshard(graph.size(), false);
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input() || (moves_data && moves_data(n))) continue;
    std::vector<int> devices = n.view_or_default().devices;
    std::sort(devices.begin(), devices.end());
    coshard[n.id.index()] = std::adjacent_find(devices.begin(), devices.end()) != devices.end();
  }
  const auto member = [&coshard](const pcg::Node& n) { return coshard[n.id.index()]; };
  pcg::UnionFind sets(graph.size());
  const auto find = [&sets](std::size_t i) { return sets.find(i); };
  for (const pcg::Node& n : graph.nodes()) {
    if (!member(n)) continue;
    for (pcg::PortRef in : n.inputs) {
      const pcg::Node& p = graph.node(in.node);
      if (member(p) && p.tasks() == n.tasks() && p.view_or_default().devices == n.view_or_default().devices)
        sets.unite(n.id.index(), in.node.index());
    }
  }
  std::map<std::size_t, std::vector<pcg::NodeId>> groups;
  for (const pcg::Node& n : graph.nodes())
    if (member(n)) groups[find(n.id.index())].push_back(n.id);
  std::vector<std::vector<pcg::NodeId>> regions;
  for (auto& [r, members] : groups) {
    const std::size_t last = members.back().index();
    bool recomputes = false, whole = true;
    for (pcg::NodeId m : members) {
      recomputes = recomputes || dropped[m.index()];
      for (pcg::NodeId reader : graph.consumers(m)) {
        const bool inside = find(reader.index()) == r && member(graph.node(reader));
        if (!inside && (reader.index() < last || dropped[m.index()])) whole = false;
      }
      // What a member reads from outside must still be there when the region runs.
      for (pcg::PortRef in : graph.node(m).inputs)
        if (dropped[in.node.index()] && find(in.node.index()) != r) whole = false;
    }
    if (recomputes && whole) regions.push_back(std::move(members));
  }
  return regions;
}

namespace {

using DeviceBytes = std::vector<std::pair<int, double>>;  // (device, bytes) entries

// The segment each dropped node belongs to: dropped nodes reading each other share one.
// Per segment (by its root), where the backward pass computes it again: at the first backward (the
// latest node) that reads one of its outputs or is one of its members.
std::map<std::size_t, std::size_t> restore_points(const pcg::Graph& graph, const std::vector<bool>& dropped,
                                                  std::vector<std::size_t>& segment) {
  pcg::UnionFind sets(graph.size());
  for (const pcg::Node& n : graph.nodes())
    if (dropped[n.id.index()])
      for (pcg::PortRef in : n.inputs)
        if (dropped[in.node.index()]) sets.unite(n.id.index(), in.node.index());
  segment.resize(graph.size());
  std::vector<std::size_t> last_reader(graph.size());
  std::iota(last_reader.begin(), last_reader.end(), std::size_t{0});
  for (const pcg::Node& n : graph.nodes())
    for (pcg::PortRef in : n.inputs) last_reader[in.node.index()] = std::max(last_reader[in.node.index()], n.id.index());
  std::map<std::size_t, std::size_t> restored_at;
  for (const pcg::Node& n : graph.nodes()) {
    segment[n.id.index()] = sets.find(n.id.index());
    if (!dropped[n.id.index()]) continue;
    std::size_t& at = restored_at[segment[n.id.index()]];
    at = std::max(at, last_reader[n.id.index()]);
  }
  return restored_at;
}

// Per device, the most the backward pass holds beyond what the forward pass kept. It walks the
// nodes backwards: it computes a dropped segment again where restore_points says (its `segments`
// bytes), frees each node's activations (`freed`) once its backward has run, and while a node's
// tasks on a device run their backward, holds the gradients of their outputs and of the inputs they
// read there (not those of graph inputs and weights, whose gradients are state, nor of values made
// from the data alone, which take none).
std::vector<double> backward_excess(const pcg::Graph& graph, const std::vector<bool>& fed, const std::vector<bool>& unread,
                                    const std::vector<bool>& not_run, const std::vector<pcg::PortRef>& moved_from,
                                    const std::vector<DeviceBytes>& freed, const std::vector<std::vector<std::size_t>>& restored_at_node,
                                    const std::vector<DeviceBytes>& piece_at_node, const std::map<std::size_t, DeviceBytes>& segments,
                                    const std::vector<std::vector<pcg::NodeId>>& regions, const std::vector<int>& region_of,
                                    const MemoryOptions& options, const std::vector<double>& kept) {
  const std::size_t devices = kept.size();
  std::vector<double> excess(devices, 0), held(devices, 0), gradients(devices, 0);
  // Values made from weights take gradients; so do the graph's outputs, whose gradients the loss
  // gives (to the pieces an output's gather that never runs would have joined).
  std::vector<bool> takes_gradient = values_taking_gradients(graph, options.trained, options.detached);
  for (pcg::PortRef o : graph.outputs()) {
    takes_gradient[o.node.index()] = true;
    if (unread[o.node.index()]) takes_gradient[moved_from[o.node.index()].node.index()] = true;
  }
  std::vector<bool> is_touched(devices, false);
  std::vector<int> touched;
  const auto touch = [&](int d) {
    if (!is_touched[static_cast<std::size_t>(d)]) touched.push_back(d);
    is_touched[static_cast<std::size_t>(d)] = true;
  };
  const auto hold = [&](const pcg::MachineView& view, const pcg::ParallelShape& shape) {
    const double piece = static_cast<double>(pcg::piece_elements(shape)) * options.bytes_per_element;
    for (std::size_t t = 0; t < static_cast<std::size_t>(shape.tasks()) && t < view.devices.size(); ++t) {
      touch(view.devices[t]);
      gradients[static_cast<std::size_t>(view.devices[t])] += piece;
    }
  };
  for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend(); ++it) {
    const pcg::Node& n = *it;
    if (fed[n.id.index()] || not_run[n.id.index()]) continue;  // an input, a weight's pieces (gradients: state), or not run
    touched.clear();
    for (std::size_t root : restored_at_node[n.id.index()]) {
      const auto segment = segments.find(root);
      if (segment == segments.end()) continue;
      for (const auto& [d, bytes] : segment->second) {
        touch(d);
        held[static_cast<std::size_t>(d)] += bytes;
      }
    }
    for (const auto& [d, bytes] : piece_at_node[n.id.index()]) {
      touch(d);
      held[static_cast<std::size_t>(d)] += bytes;
    }
    const int region = region_of[n.id.index()];
    if (region < 0 && takes_gradient[n.id.index()]) {
      const pcg::MachineView view = n.view_or_default();
      for (const pcg::ParallelShape& s : n.output_shapes) hold(view, s);
      // An operator's tasks make its inputs' gradients where they run; a layout change moves them
      // back to where the value it moves from lies.
      const bool moves_data = options.moves_data && options.moves_data(n) && n.inputs.size() == 1;
      for (pcg::PortRef in : moves_data ? std::vector<pcg::PortRef>{moved_from[n.id.index()]} : n.inputs)
        if (!fed[in.node.index()] && takes_gradient[in.node.index()])
          hold(moves_data ? graph.node(in.node).view_or_default() : view, graph.shape_of(in));
    } else if (region >= 0 && regions[static_cast<std::size_t>(region)].back() == n.id) {
      // A co-shard region's backward, piece by piece: besides one piece of its dropped values
      // (piece_at_node) and the gradients of one member's piece and of what it reads, it holds
      // the gradients given from outside (spent piece by piece) and those of what it reads from
      // outside (filled up piece by piece).
      double largest_piece = 0;
      for (pcg::NodeId m : regions[static_cast<std::size_t>(region)]) {
        const pcg::Node& member = graph.node(m);
        if (!takes_gradient[m.index()]) continue;
        const std::vector<pcg::NodeId> readers = graph.consumers(m);
        const bool given = std::any_of(readers.begin(), readers.end(), [&](pcg::NodeId r) { return region_of[r.index()] != region; }) ||
                           std::any_of(graph.outputs().begin(), graph.outputs().end(), [&](pcg::PortRef o) { return o.node == m; });
        for (const pcg::ParallelShape& s : member.output_shapes)
          if (given)
            hold(member.view_or_default(), s);
          else
            largest_piece = std::max(largest_piece, static_cast<double>(pcg::piece_elements(s)) * options.bytes_per_element);
        for (pcg::PortRef in : member.inputs)
          if (!fed[in.node.index()] && takes_gradient[in.node.index()] && region_of[in.node.index()] != region)
            hold(member.view_or_default(), graph.shape_of(in));
      }
      const std::vector<int> devices_of_pieces = n.view_or_default().devices;
      for (int d : devices_of_pieces) {
        touch(d);
        const auto pieces_there = std::count(devices_of_pieces.begin(), devices_of_pieces.end(), d);
        gradients[static_cast<std::size_t>(d)] += 2 * largest_piece / static_cast<double>(pieces_there);
      }
    }
    if (options.trace) {
      MemoryStep step{n.id, true, kept};
      for (std::size_t d = 0; d < devices; ++d) step.bytes[d] += held[d] + gradients[d];
      options.trace->push_back(std::move(step));
    }
    for (int d : touched) {
      const auto i = static_cast<std::size_t>(d);
      excess[i] = std::max(excess[i], held[i] + gradients[i]);
      gradients[i] = 0;
      is_touched[i] = false;
    }
    for (const auto& [d, bytes] : freed[n.id.index()]) held[static_cast<std::size_t>(d)] -= bytes;
    for (const auto& [d, bytes] : piece_at_node[n.id.index()]) held[static_cast<std::size_t>(d)] -= bytes;
  }
  return excess;
}

// Per task of `n`'s outputs, the devices its piece lies on: its view's device, but where layout
// changes are known (`moves_data`), a graph input lies where operators read it directly, task t's
// device holding piece t (an operator's inputs have its tasks), as the simulator loads it there;
// on its own view only where nothing reads it so.
std::vector<std::vector<int>> piece_devices(const pcg::Graph& graph, const pcg::Node& n, const std::vector<pcg::NodeId>& readers,
                                            const std::function<bool(const pcg::Node&)>& moves_data, const Machine& machine) {
  const pcg::MachineView view = checked_view(n, machine);
  const std::size_t tasks = view.devices.size();
  std::vector<std::vector<int>> out(tasks);
  if (n.is_graph_input() && moves_data)
    for (pcg::NodeId r : readers) {
      const pcg::Node& reader = graph.node(r);
      if (moves_data(reader)) continue;
      const pcg::MachineView at = checked_view(reader, machine);
      for (std::size_t t = 0; t < tasks && t < at.devices.size(); ++t)
        if (std::find(out[t].begin(), out[t].end(), at.devices[t]) == out[t].end()) out[t].push_back(at.devices[t]);
    }
  if (std::all_of(out.begin(), out.end(), [](const std::vector<int>& d) { return d.empty(); }))
    for (std::size_t t = 0; t < tasks; ++t) out[t] = {view.devices[t]};
  return out;
}

}  // namespace

std::vector<double> memory_per_device(const pcg::Graph& graph, const Machine& machine, const MemoryOptions& options) {
  std::vector<double> bytes(static_cast<std::size_t>(machine.devices()), 0);
  // A weight, or a piece of one a parallelization operator made from it directly; and whether it
  // carries a gradient and optimizer state.
  std::vector<bool> weight(graph.size(), false), with_state(graph.size(), false);
  std::vector<bool> held_by_consumers(graph.size(), false);
  const std::vector<std::vector<pcg::NodeId>> consumers = graph.all_consumers();
  // What each layout change moves from as it runs, and which run not at all, fused into a later one.
  const pcg::LayoutChangeSources& as_run = options.layout_changes;
  std::vector<pcg::PortRef> moved_from(graph.size());
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input() || n.inputs.size() != 1) continue;
    const bool given = !as_run.source.empty() && as_run.source[n.id.index()].node.valid();
    moved_from[n.id.index()] = given ? as_run.source[n.id.index()] : n.inputs[0];
  }
  for (const pcg::Node& n : graph.nodes()) {
    weight[n.id.index()] = n.op == pcg::kWeightOp;
    with_state[n.id.index()] = weight[n.id.index()] && (!options.trained || options.trained(n));
    if (!options.moves_data) continue;
    if (options.moves_data(n) && n.inputs.size() == 1 && graph.node(moved_from[n.id.index()].node).is_graph_input()) {
      weight[n.id.index()] = weight[moved_from[n.id.index()].node.index()];
      with_state[n.id.index()] = with_state[moved_from[n.id.index()].node.index()];
    }
    if (n.is_graph_input()) {
      const std::vector<pcg::NodeId>& readers = consumers[n.id.index()];
      held_by_consumers[n.id.index()] =
          !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](pcg::NodeId r) { return options.moves_data(graph.node(r)); });
    }
  }
  const std::vector<bool> fed = made_from_graph_inputs(graph, options.moves_data);
  // Layout changes the runtime never runs: a graph output's gather that the loss reads in pieces.
  std::vector<bool> unread(graph.size(), false);
  for (pcg::PortRef out : graph.outputs()) {
    const pcg::Node& n = graph.node(out.node);
    unread[n.id.index()] =
        options.moves_data && options.moves_data(n) && n.inputs.size() == 1 && pcg::is_unread_output(graph, n.id, moved_from[n.id.index()]);
  }
  std::vector<bool> not_run = unread;
  for (std::size_t i = 0; i < not_run.size() && !as_run.fused_away.empty(); ++i) not_run[i] = not_run[i] || as_run.fused_away[i];
  // A recomputed operator's output, and the layout changes made of it, are computed again too;
  // a graph output is kept.
  std::vector<bool> dropped(graph.size(), false);
  for (const pcg::Node& n : graph.nodes())
    dropped[n.id.index()] = !held_by_consumers[n.id.index()] &&
                            (std::find(options.recomputed.begin(), options.recomputed.end(), n.id) != options.recomputed.end() ||
                             (options.moves_data && options.moves_data(n) && n.inputs.size() == 1 && dropped[n.inputs[0].node.index()]));
  // A graph output is kept, and so is what an unread gather of one would move from: the loss reads it.
  for (pcg::PortRef out : graph.outputs()) {
    dropped[out.node.index()] = false;
    if (unread[out.node.index()]) dropped[moved_from[out.node.index()].node.index()] = false;
  }
  // Co-shard regions hold one piece of their dropped values at a time, when their last member's turn comes.
  const std::vector<std::vector<pcg::NodeId>> regions = piecewise_regions(graph, options.moves_data, dropped);
  std::vector<int> region_of(graph.size(), -1);
  for (std::size_t r = 0; r < regions.size(); ++r)
    for (pcg::NodeId m : regions[r]) region_of[m.index()] = static_cast<int>(r);
  std::vector<std::map<std::pair<int, std::size_t>, double>> region_pieces(regions.size());  // by device and piece
  std::vector<bool> segmented = dropped;
  for (std::size_t i = 0; i < segmented.size(); ++i) segmented[i] = segmented[i] && region_of[i] < 0;
  std::vector<std::size_t> segment;
  const std::map<std::size_t, std::size_t> restored_at = restore_points(graph, segmented, segment);
  std::vector<std::vector<std::size_t>> restored_at_node(graph.size());
  for (const auto& [root, node] : restored_at) restored_at_node[node].push_back(root);
  std::map<std::size_t, DeviceBytes> segments;   // per segment root, its pieces
  std::vector<DeviceBytes> freed(graph.size());  // per node, the activations the backward pass frees after it
  // What no gradient reaches is freed once the forward pass has read it, never to come back.
  const std::vector<bool> cut_off =
      freed_after_forward(graph, options.detached, values_taking_gradients(graph, options.trained, options.detached));
  for (const pcg::Node& n : graph.nodes()) {
    if (held_by_consumers[n.id.index()] || not_run[n.id.index()] || (options.activations_only && fed[n.id.index()])) continue;
    if (cut_off[n.id.index()] && !weight[n.id.index()]) continue;
    // A segment's second reading of a weight holds nothing of its own where the weight is read too.
    if (read_without_gradient(n) && graph.find(weight_read(n))) continue;
    const bool recomputed = dropped[n.id.index()];
    const std::vector<std::vector<int>> devices = piece_devices(graph, n, consumers[n.id.index()], options.moves_data, machine);
    const bool is_weight = weight[n.id.index()];
    const double copies = with_state[n.id.index()] ? 1 + options.weight_state_copies : 1;
    for (const pcg::ParallelShape& s : n.output_shapes) {
      const double piece = static_cast<double>(pcg::piece_elements(s)) * options.bytes_per_element * copies;
      // A device keeps one copy of a replicated weight, with its state, however many of its
      // replicas (co-sharded pieces reading it) it runs: the runtime reads them all in place.
      std::set<std::pair<int, std::vector<std::int64_t>>> weight_parts;
      for (std::size_t t = 0; t < static_cast<std::size_t>(s.tasks()) && t < devices.size(); ++t)
        for (const int d : devices[t]) {
          if (is_weight && s.R == s.tasks() && !weight_parts.emplace(d, pcg::task_piece(s, static_cast<std::int64_t>(t)).block).second)
            continue;
          const bool repeated = !is_weight && !options.activation_copies.empty();
          const double held = repeated && !recomputed ? piece * options.activation_copies[static_cast<std::size_t>(d)] : piece;
          const int region = recomputed ? region_of[n.id.index()] : -1;
          if (region >= 0) {
            region_pieces[static_cast<std::size_t>(region)][{d, t}] += held;
            continue;
          }
          if (recomputed)
            segments[segment[n.id.index()]].emplace_back(d, held);
          else
            bytes[static_cast<std::size_t>(d)] += held;
          // One micro-batch's backward frees its own copy; those in flight stay.
          if (!is_weight && !fed[n.id.index()]) freed[n.id.index()].emplace_back(d, piece);
        }
    }
    if (options.trace) options.trace->push_back({n.id, false, bytes});
  }
  std::vector<DeviceBytes> piece_at_node(graph.size());
  for (std::size_t r = 0; r < regions.size(); ++r) {
    std::map<int, double> largest;
    for (const auto& [at, piece_bytes] : region_pieces[r]) largest[at.first] = std::max(largest[at.first], piece_bytes);
    for (const auto& [d, piece_bytes] : largest) piece_at_node[regions[r].back().index()].emplace_back(d, piece_bytes);
  }
  const std::vector<double> excess = backward_excess(graph, fed, unread, not_run, moved_from, freed, restored_at_node, piece_at_node,
                                                     segments, regions, region_of, options, bytes);
  for (std::size_t d = 0; d < bytes.size(); ++d) bytes[d] += excess[d];
  return bytes;
}

double fullest_device_bytes(const std::vector<double>& bytes) { return bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end()); }

int first_overfull_device(const std::vector<double>& bytes, const Machine& machine) {
  for (std::size_t d = 0; d < bytes.size(); ++d)
    if (bytes[d] > machine.device.memory_bytes) return static_cast<int>(d);
  return -1;
}

}  // namespace loom::search

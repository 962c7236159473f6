#include "loom/search/materialize.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/hash_mix.hpp"
#include "loom/search/rvd_search.hpp"

namespace loom::search {
namespace {

// A value of the input graph held as `shape` on `view`.
struct Delivery {
  pcg::PortRef value;
  pcg::ParallelShape shape;
  pcg::MachineView view;
  bool operator==(const Delivery&) const = default;
};

struct DeliveryHash {
  std::size_t operator()(const Delivery& d) const {
    std::uint64_t h = pcg::hash_mix(static_cast<std::uint64_t>(d.value.node), static_cast<std::uint64_t>(d.value.port));
    h = pcg::hash_mix(h, std::hash<pcg::ParallelShape>{}(d.shape));
    return static_cast<std::size_t>(pcg::hash_mix(h, std::hash<pcg::MachineView>{}(d.view)));
  }
};

class Materializer {
 public:
  Materializer(const pcg::Graph& graph, const std::vector<Placement>& placements, const spec::Library& library, const RvdSearch& moves)
      : graph_(graph), placements_(placements), catalog_(library), moves_(moves), ports_(graph.size()) {}

  pcg::Graph run() {
    if (placements_.size() != graph_.size())
      throw LoomError("a placement is needed for each of the graph's " + std::to_string(graph_.size()) + " nodes, " +
                      std::to_string(placements_.size()) + " given");
    const std::vector<std::vector<pcg::NodeId>> consumers = graph_.all_consumers();
    for (const pcg::Node& n : graph_.nodes()) {
      if (n.is_graph_input()) {
        // Inputs are loaded and weights kept where their first reader runs.
        const std::vector<pcg::NodeId>& readers = consumers[n.id.index()];
        const int device = readers.empty() ? 0 : placements_[readers.front().index()].view().devices.front();
        const pcg::MachineView view = pcg::MachineView::contiguous(device, n.output_shapes[0].tasks());
        const int id = out_.add_input_like(n, n.output_shapes[0]);
        out_.set_view(id, view);
        ports_[n.id.index()] = {{pcg::PortRef{id, 0}, view}};
        continue;
      }
      const Placement& p = placements_[n.id.index()];
      if (p.config.inputs.size() != n.inputs.size())
        throw LoomError(n.describe() + ": its placement gives " + std::to_string(p.config.inputs.size()) + " input shapes for " +
                        std::to_string(n.inputs.size()) + " inputs");
      const pcg::MachineView view = p.view();
      std::vector<pcg::PortRef> inputs;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) inputs.push_back(deliver(n.inputs[i], p.config.inputs[i], view, n));
      const int id = out_.add_node(catalog_, n.op, n.attrs, inputs, n.name);
      out_.set_view(id, view);
      for (std::size_t port = 0; port < n.output_shapes.size(); ++port)
        ports_[n.id.index()].push_back({pcg::PortRef{id, static_cast<int>(port)}, view});
    }
    for (pcg::PortRef o : graph_.outputs()) {
      const Held& h = ports_[o.node.index()][static_cast<std::size_t>(o.port)];
      out_.mark_output(deliver(o, graph_.shape_of(o), pcg::MachineView::contiguous(h.view.devices.front(), graph_.shape_of(o).tasks()),
                               graph_.node(o.node)));
    }
    return std::move(out_);
  }

 private:
  struct Held {
    pcg::PortRef port;
    pcg::MachineView view;
  };

  // The port of the new graph that holds `value` (a port of the input graph) as `shape` on `view`.
  pcg::PortRef deliver(pcg::PortRef value, const pcg::ParallelShape& shape, const pcg::MachineView& view, const pcg::Node& consumer) {
    const Held held = ports_[value.node.index()][static_cast<std::size_t>(value.port)];
    const pcg::ParallelShape& have = out_.shape_of(held.port);
    if (have == shape) return held.port;
    const Delivery key{value, shape, view};
    if (auto it = delivered_.find(key); it != delivered_.end()) return it->second;
    const std::optional<ReshardPath>& path = moves_.cheapest(have, held.view, shape, view, out_.node(held.port.node).is_graph_input());
    if (!path)
      throw LoomError(consumer.describe() + ": cannot move " + graph_.node(value.node).describe() + "'s output from " + have.to_string() +
                      " to " + shape.to_string() + ": no chain of the library's parallel and fused forms does it");
    pcg::PortRef at = held.port;
    for (const ReshardStep& s : path->steps) {
      const int id = out_.add_node(catalog_, s.op, s.attrs, {at});
      out_.set_view(id, s.view);
      at = {id, 0};
    }
    delivered_[key] = at;
    return at;
  }

  const pcg::Graph& graph_;
  const std::vector<Placement>& placements_;
  const spec::Library& catalog_;
  const RvdSearch& moves_;
  pcg::Graph out_;
  std::vector<std::vector<Held>> ports_;  // input graph node -> port -> where it is in the new graph
  std::unordered_map<Delivery, pcg::PortRef, DeliveryHash> delivered_;
};

}  // namespace

pcg::Graph materialize(const pcg::Graph& graph, const std::vector<Placement>& placements, const spec::Library& library,
                       const RvdSearch& moves) {
  return Materializer(graph, placements, library, moves).run();
}

Machine even_machine(const std::vector<Placement>& placements) {
  int devices = 1;
  for (const Placement& p : placements)
    for (int d : p.view().devices) devices = std::max(devices, d + 1);
  Machine m;
  m.name = "even links";
  m.devices_per_socket = devices;
  m.device.peak_flops = 1e12;
  m.device.memory_bandwidth = 1e11;
  m.device.memory_bytes = 1e12;
  m.intra_socket = m.inter_socket = m.inter_node = Link(1e10, 1e-6);
  return m;
}

pcg::Graph materialize(const pcg::Graph& graph, const std::vector<Placement>& placements, const spec::Library& library) {
  return materialize(graph, placements, library, RvdSearch(library, even_machine(placements)));
}

std::vector<Placement> unsplit_placements(const pcg::Graph& graph) {
  std::vector<Placement> out;
  for (const pcg::Node& n : graph.nodes()) out.push_back({unsplit_config(graph, n), 0});
  return out;
}

}  // namespace loom::search

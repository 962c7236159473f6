#include "loom/search/port_loads.hpp"

#include <algorithm>
#include <set>

namespace loom::search {

void PortLoads::add(int from, int to, double elements) {
  if (!ports_.between_nodes(from, to)) return;
  for (const auto& key : {std::pair(ports_.port_of(from), true), std::pair(ports_.port_of(to), false)}) {
    PortLoad& load = loads_[key];
    ++load.messages;
    load.elements += elements;
  }
}

std::vector<PortLoad> PortLoads::distinct() const {
  std::set<PortLoad> seen;
  for (const auto& [port, load] : loads_) seen.insert(load);
  return {seen.begin(), seen.end()};
}

int PortLoads::turns_on_way(int from, int to) const {
  if (!ports_.between_nodes(from, to)) return 1;
  const auto messages = [this](std::pair<int, bool> key) {
    const auto it = loads_.find(key);
    return it == loads_.end() ? 0 : it->second.messages;
  };
  return std::max({1, messages({ports_.port_of(from), true}), messages({ports_.port_of(to), false})});
}

std::vector<int> ring_port_turns(const NetworkPorts& ports, const std::vector<std::vector<int>>& rings) {
  PortLoads loads(ports);
  const auto each_step = [](const std::vector<int>& ring, auto&& f) {
    if (ring.size() < 2) return;
    for (std::size_t i = 0; i < ring.size(); ++i) f(ring[i], ring[(i + 1) % ring.size()]);
  };
  for (const std::vector<int>& ring : rings) each_step(ring, [&loads](int a, int b) { loads.add(a, b); });
  std::vector<int> turns;
  for (const std::vector<int>& ring : rings) {
    int most = 1;
    each_step(ring, [&](int a, int b) { most = std::max(most, loads.turns_on_way(a, b)); });
    turns.push_back(most);
  }
  return turns;
}

int all_to_all_port_blocks(const NetworkPorts& ports, const std::vector<int>& devices) {
  if (ports.devices_per_node <= 0) return 0;
  // Each device sends a block to, and gets one from, every device of the group on another node,
  // through its port: a port carries its devices' count times the group's devices elsewhere, each
  // way. Counted rather than added up message by message: the simulator asks for every group of
  // every all-to-all each time it builds a task graph.
  std::map<int, int> on_node, on_port;
  for (int d : devices) {
    ++on_node[d / ports.devices_per_node];
    ++on_port[ports.port_of(d)];
  }
  const int count = static_cast<int>(devices.size());
  int most = 0;
  for (int d : devices) most = std::max(most, on_port[ports.port_of(d)] * (count - on_node[d / ports.devices_per_node]));
  return most;
}

}  // namespace loom::search
